// Session::configure_memory: episodic memory's capacity and its store file (recall is in
// session_memory.cpp).
#include "core/error.h"
#include "engine/session.h"
#include "model/fingerprint.h"

namespace channel {

std::vector<std::string> Session::configure_memory(const EpisodicMemoryOptions& options) {
  if (!episodes_.episodes().empty() || !stage_.empty()) {
    fail("episodic memory is configured before the first input, not after episodes were staged");
  }
  EpisodeStore store(options.capacity);
  std::unique_ptr<EpisodeFile> file;
  if (options.enabled && !options.path.empty()) {
    file = std::make_unique<EpisodeFile>(
        options.path, episode_file_header(model_fingerprint(*model_), model_->config()), store);
  }
  episodes_ = std::move(store);
  episode_file_ = std::move(file);
  memory_enabled_ = options.enabled;
  scan_ = std::make_unique<CentroidScan>(episodes_, context_.backend(), options.scan_threads);
  return episode_file_ ? episode_file_->notices() : std::vector<std::string>{};
}

}  // namespace channel
