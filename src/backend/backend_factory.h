// The one place that turns a backend choice into a Backend: every command (run, chat, eval, serve,
// bench) asks here, none names a concrete backend class.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "backend/backend.h"
#include "model/model.h"

namespace channel {

enum class BackendKind { Cpu, Vulkan };

struct BackendOptions {
  BackendKind kind = BackendKind::Cpu;
  int threads = 1;            // CPU threads: the CPU backend's parallelism
  int gpu_device = -1;        // Vulkan: device index as `channel gpu list` shows it; -1 picks the best
  int layers_per_submit = 4;  // Vulkan: layers per command-buffer submit (driver watchdogs, seed 001)
};

std::optional<BackendKind> parse_backend_kind(std::string_view name);
std::string_view backend_kind_name(BackendKind kind);

// Throws channel::Error when the backend cannot run here (e.g. no usable GPU), naming what was
// looked for.
std::unique_ptr<Backend> make_backend(std::shared_ptr<const Model> model, const BackendOptions& options);

}  // namespace channel
