// A backend that passes every call to another one: the base of the test backends that watch or
// disturb some calls (faulty_backend.h, the rollback tests' recording backend) and pass the rest.
#pragma once

#include "backend/backend.h"

namespace channel::testing {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(Backend& inner) : inner_(inner) {}

  bool forward(const Batch& batch, const AttentionView& view, LogitsWanted wanted, std::span<const int32_t> candidates,
               Logits& out) override {
    return inner_.forward(batch, view, wanted, candidates, out);
  }
  void rotate_keys(std::span<const uint32_t> slots, int64_t delta) override { inner_.rotate_keys(slots, delta); }
  void read_kv(std::span<const uint32_t> slots, KvBlob& out) const override { inner_.read_kv(slots, out); }
  void write_kv(const KvBlob& blob) override { inner_.write_kv(blob); }
  std::unique_ptr<RowDotTable> make_row_dot_table(size_t rows, size_t width) override {
    return inner_.make_row_dot_table(rows, width);
  }
  std::string description() const override { return inner_.description(); }
  bool is_gpu() const override { return inner_.is_gpu(); }

 private:
  Backend& inner_;
};

}  // namespace channel::testing
