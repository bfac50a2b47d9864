// The memory scan's device path without a device: a backend whose "device memory" is a host
// table that records every row written. The scan must give the host scan's cosines bit for bit
// (the table dots rows with the same kernel) after every kind of store change (first rows, the
// ring turning, more commits than the store holds between two scans), copy only the rows
// written since the last scan, and fall back to the host where the backend gives no table or
// has no room for one.
#include "engine/centroid_scan.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/row_dots.h"
#include "core/split_mix.h"
#include "core/thread_pool.h"
#include "core/unit_length.h"
#include "engine/episode_scoring.h"

namespace channel {
namespace {

class HostRowDotTable final : public RowDotTable {
 public:
  HostRowDotTable(size_t rows, size_t width, size_t& rows_written)
      : rows_(rows), width_(width), values_(rows * width, 0.0f), rows_written_(rows_written) {}
  size_t rows() const override { return rows_; }
  size_t width() const override { return width_; }
  void write_rows(size_t first_row, std::span<const float> values) override {
    if (values.size() % width_ != 0 || first_row + values.size() / width_ > rows_) fail("rows out of the table");
    std::copy(values.begin(), values.end(), values_.begin() + static_cast<std::ptrdiff_t>(first_row * width_));
    rows_written_ += values.size() / width_;
  }
  void dot_rows(std::span<const float> vector, std::span<float> out) override {
    dot_rows_f32(std::span<const float>(values_).first(out.size() * width_), vector, out);
  }

 private:
  size_t rows_, width_;
  std::vector<float> values_;
  size_t& rows_written_;
};

// Only make_row_dot_table is used by the scan; the model's calls are not.
class TableBackend final : public Backend {
 public:
  enum class Tables { kGiven, kNone, kNoRoom };
  explicit TableBackend(Tables tables) : tables_(tables) {}
  bool forward(const Batch&, const AttentionView&, LogitsWanted, std::span<const int32_t>, Logits&) override {
    throw std::logic_error("not a model");
  }
  void rotate_keys(std::span<const uint32_t>, int64_t) override { throw std::logic_error("not a model"); }
  void read_kv(std::span<const uint32_t>, KvBlob&) const override { throw std::logic_error("not a model"); }
  void write_kv(const KvBlob&) override { throw std::logic_error("not a model"); }
  std::unique_ptr<RowDotTable> make_row_dot_table(size_t rows, size_t width) override {
    ++tables_made;
    if (tables_ == Tables::kNoRoom) fail("no room for {} x {}", rows, width);
    if (tables_ == Tables::kNone) return nullptr;
    return std::make_unique<HostRowDotTable>(rows, width, rows_written);
  }
  std::string description() const override { return "table backend"; }
  bool is_gpu() const override { return tables_ != Tables::kNone; }

  int tables_made = 0;
  size_t rows_written = 0;

 private:
  Tables tables_;
};

Episode random_episode(SplitMix64& random, size_t width) {
  Episode e;
  e.centroid.resize(width);
  for (float& x : e.centroid) x = random.normal();
  scale_to_unit_length(e.centroid);
  return e;
}

std::vector<float> random_query(SplitMix64& random, size_t width) { return random_episode(random, width).centroid; }

TEST(CentroidScan, TheDeviceCopyFollowsTheStoreAndCopiesOnlyNewRows) {
  SplitMix64 random(11);
  constexpr size_t kCapacity = 5, kWidth = 19;
  EpisodeStore store(kCapacity);
  TableBackend backend(TableBackend::Tables::kGiven);
  ThreadPool pool(1);
  CentroidScan scan(store, backend, 1);
  EXPECT_TRUE(scan.cosines(random_query(random, kWidth)).empty());  // nothing stored: no table either
  EXPECT_EQ(backend.tables_made, 0);

  // Commits between two scans: the first rows; more, filling the store; two that turn the ring;
  // none; seven (more than the store holds: every row is new); one.
  size_t written_before = 0;
  for (size_t commits : {2, 3, 2, 0, 7, 1}) {
    for (size_t i = 0; i < commits; ++i) store.add(random_episode(random, kWidth));
    const std::vector<float> query = random_query(random, kWidth);
    const std::string where = fmt::format("after {} commits, {} in all", commits, store.centroids_kept());
    EXPECT_EQ(scan.cosines(query), centroid_cosines(store, query, pool)) << where;
    EXPECT_TRUE(scan.on_device()) << where;
    EXPECT_EQ(backend.rows_written - written_before, std::min(commits, kCapacity)) << where;
    written_before = backend.rows_written;
  }
  EXPECT_EQ(backend.tables_made, 1);
}

TEST(CentroidScan, WithoutADeviceTableTheHostScans) {
  for (auto tables : {TableBackend::Tables::kNone, TableBackend::Tables::kNoRoom}) {
    SplitMix64 random(12);
    EpisodeStore store(4);
    TableBackend backend(tables);
    ThreadPool pool(1);
    CentroidScan scan(store, backend, 2);
    for (int i = 0; i < 6; ++i) store.add(random_episode(random, 8));
    const std::vector<float> query = random_query(random, 8);
    EXPECT_EQ(scan.cosines(query), centroid_cosines(store, query, pool));
    EXPECT_FALSE(scan.on_device());
    EXPECT_EQ(scan.cosines(query), centroid_cosines(store, query, pool));
    EXPECT_EQ(backend.tables_made, 1);  // asked once, not before every scan
  }
}

TEST(CentroidScan, AQueryOfAnotherWidthIsRefused) {
  SplitMix64 random(13);
  EpisodeStore store(4);
  TableBackend backend(TableBackend::Tables::kGiven);
  CentroidScan scan(store, backend, 1);
  store.add(random_episode(random, 8));
  EXPECT_THROW(scan.cosines(random_query(random, 9)), Error);
}

}  // namespace
}  // namespace channel
