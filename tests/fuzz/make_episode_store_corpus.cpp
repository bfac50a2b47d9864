// Writes the seed corpus of fuzz_episode_store: an empty store, one of three episodes of
// different lengths (one with a NaN centroid value), that one with its last record torn, and a
// store of one episode in format version 1 (FNV-1a checksums, as older builds wrote).
// Usage: make_episode_store_corpus DIR
#include "fuzz/corpus_maker.h"
#include "unit/engine/episode_samples.h"

int main(int argc, char** argv) {
  return channel::test::run_corpus_maker(argc, argv, [](const std::filesystem::path& dir) {
    const channel::EpisodeFileHeader header = channel::test::sample_episode_header();
    std::vector<uint8_t> store = channel::encode_episode_header(header);
    channel::test::write_corpus_file(dir / "seed_episode_store_empty.bin", store);
    for (uint64_t id = 1; id <= 3; ++id) {
      channel::Episode episode = channel::test::sample_episode(id + 1, static_cast<uint32_t>(id * 2));
      episode.id = id;
      const auto record = channel::encode_episode_record(episode, header);
      store.insert(store.end(), record.begin(), record.end());
    }
    channel::test::write_corpus_file(dir / "seed_episode_store_three.bin", store);
    store.resize(store.size() - 7);
    channel::test::write_corpus_file(dir / "seed_episode_store_torn.bin", store);
    channel::EpisodeFileHeader v1 = header;
    v1.version = 1;
    std::vector<uint8_t> old_store = channel::encode_episode_header(v1);
    channel::Episode episode = channel::test::sample_episode(5, 3);
    episode.id = 1;
    const auto record = channel::encode_episode_record(episode, v1);
    old_store.insert(old_store.end(), record.begin(), record.end());
    channel::test::write_corpus_file(dir / "seed_episode_store_version_1.bin", old_store);
  });
}
