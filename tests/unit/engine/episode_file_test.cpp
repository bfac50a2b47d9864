// The episode store on disk: episodes come back bit for bit, ids continue, the capacity drops the
// oldest, another model's or a corrupt store is left untouched beside a fresh one, a torn last
// record (at any byte) loses only that record, and a writer killed at a random moment loses no
// episode it had committed.
#include "engine/episode_file.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"
#include "episode_samples.h"

namespace channel {
namespace {

namespace fs = std::filesystem;

class EpisodeFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("channel_episode_file_{}_{}", ::testing::UnitTest::GetInstance()->current_test_info()->name(), ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "store.mem").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::string path_;
};

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Every field, compared as the bytes the format writes (NaN centroids included).
std::vector<uint8_t> record_of(const Episode& e) { return encode_episode_record(e, test::sample_episode_header()); }

// Commits episodes of seeds `first`.. `first + count - 1` to the store at `path`.
void commit(const std::string& path, size_t capacity, uint64_t first, size_t count) {
  EpisodeStore store(capacity);
  EpisodeFile file(path, test::sample_episode_header(), store);
  for (uint64_t seed = first; seed < first + count; ++seed) file.append(store.add(test::sample_episode(seed)), store);
}

TEST_F(EpisodeFileTest, EpisodesComeBackBitForBit) {
  std::vector<std::vector<uint8_t>> written;
  {
    EpisodeStore store;
    EpisodeFile file(path_, test::sample_episode_header(), store);
    EXPECT_TRUE(file.notices().empty());
    for (uint64_t seed = 0; seed < 6; ++seed) {
      const Episode& e = store.add(test::sample_episode(seed, static_cast<uint32_t>(1 + seed * 3)));
      file.append(e, store);
      written.push_back(record_of(e));
    }
  }
  const std::vector<uint8_t> bytes = read_bytes(path_);
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 8), "CHNLEPIS");
  EpisodeStore store;
  EpisodeFile file(path_, test::sample_episode_header(), store);
  EXPECT_TRUE(file.notices().empty());
  ASSERT_EQ(store.episodes().size(), written.size());
  for (size_t i = 0; i < written.size(); ++i) {
    EXPECT_EQ(store.episodes()[i].id, i + 1);
    EXPECT_EQ(record_of(store.episodes()[i]), written[i]) << "episode " << i + 1;
  }
  EXPECT_EQ(store.episodes()[2].kv, test::sample_episode(2, 7).kv);
}

TEST_F(EpisodeFileTest, ReopeningContinuesTheIds) {
  commit(path_, 64, 0, 3);
  commit(path_, 64, 3, 2);
  EpisodeStore store;
  EpisodeFile file(path_, test::sample_episode_header(), store);
  ASSERT_EQ(store.episodes().size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(store.episodes()[i].id, i + 1);
  EXPECT_EQ(store.add(test::sample_episode(9)).id, 6u);
}

TEST_F(EpisodeFileTest, CapacityDropsTheOldestAndTheFileIsCompacted) {
  commit(path_, 3, 0, 20);
  {
    EpisodeStore store(3);
    EpisodeFile file(path_, test::sample_episode_header(), store);
    EXPECT_LE(file.records(), 6u);  // rewritten whenever it holds more than twice the capacity
    ASSERT_EQ(store.episodes().size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(store.episodes()[i].id, 18 + i);
      Episode expected = test::sample_episode(17 + i);
      expected.id = 18 + i;
      EXPECT_EQ(record_of(store.episodes()[i]), record_of(expected));
    }
    EXPECT_FALSE(fs::exists(path_ + ".tmp"));
  }
  // A smaller capacity than the file was written with keeps the newest and compacts at once.
  commit(path_, 64, 100, 10);
  EpisodeStore small(2);
  EpisodeFile reopened(path_, test::sample_episode_header(), small);
  EXPECT_EQ(reopened.records(), 2u);
  EXPECT_EQ(small.episodes().front().id, 29u);
}

// A store begun by an older build (format version 1, FNV-1a checksums) is read, appended to in
// its own format (a scan reads every record back) and rewritten in this build's at compaction.
TEST_F(EpisodeFileTest, AVersionOneStoreIsReadAppendedToAndUpgradedWhenCompacted) {
  EpisodeFileHeader v1 = test::sample_episode_header();
  v1.version = 1;
  std::vector<uint8_t> bytes = encode_episode_header(v1);
  for (uint64_t seed = 0; seed < 3; ++seed) {
    Episode e = test::sample_episode(seed);
    e.id = seed + 1;
    const std::vector<uint8_t> record = encode_episode_record(e, v1);
    bytes.insert(bytes.end(), record.begin(), record.end());
  }
  write_bytes(path_, bytes);
  const auto file_version = [&] {
    size_t header_length = 0;
    return parse_episode_header(read_bytes(path_), header_length).version;
  };
  const auto scanned_records = [&] {
    const EpisodeFileScan scan = scan_episode_file(read_bytes(path_), [](Episode&&) {});
    EXPECT_FALSE(scan.problem) << *scan.problem;
    return scan.records;
  };
  commit(path_, 4, 10, 2);  // 5 records: not yet over twice the capacity
  EXPECT_EQ(file_version(), 1u);
  EXPECT_EQ(scanned_records(), 5u);
  EXPECT_FALSE(fs::exists(path_ + "." + fmt::format("{:016x}", test::sample_episode_header().model_fingerprint)));
  commit(path_, 2, 20, 1);  // 5 records over a capacity of 2: compacted to the newest 2 at open, then 1 more
  EXPECT_EQ(file_version(), kEpisodeFileVersion);
  EXPECT_EQ(scanned_records(), 3u);
  EpisodeStore store(2);
  EpisodeFile file(path_, test::sample_episode_header(), store);
  ASSERT_EQ(store.episodes().size(), 2u);
  EXPECT_EQ(store.episodes().back().id, 6u);
}

TEST_F(EpisodeFileTest, AnotherModelsStoreIsLeftAsItIsAndAFreshOneUsedBeside) {
  commit(path_, 64, 0, 2);
  const std::vector<uint8_t> before = read_bytes(path_);
  const uint64_t other = 0xfeedfacecafebeefull;
  const std::string fallback = fallback_episode_path(path_, other);
  EXPECT_EQ(fallback, path_ + ".feedfacecafebeef");
  {
    EpisodeStore store;
    EpisodeFile file(path_, test::sample_episode_header(other), store);
    EXPECT_EQ(file.path(), fallback);
    ASSERT_EQ(file.notices().size(), 1u);
    EXPECT_NE(file.notices()[0].find("another model (fingerprint 0123456789abcdef, this model's is feedfacecafebeef)"),
              std::string::npos)
        << file.notices()[0];
    EXPECT_TRUE(store.episodes().empty());
    file.append(store.add(test::sample_episode(7, 5, test::sample_episode_header(other))), store);
  }
  EXPECT_EQ(read_bytes(path_), before);
  // The other model finds its own store again; the first model still has its own.
  EpisodeStore again;
  EpisodeFile file(path_, test::sample_episode_header(other), again);
  EXPECT_EQ(file.path(), fallback);
  EXPECT_EQ(again.episodes().size(), 1u);
  EpisodeStore first;
  EpisodeFile original(path_, test::sample_episode_header(), first);
  EXPECT_EQ(original.path(), path_);
  EXPECT_EQ(first.episodes().size(), 2u);
}

TEST_F(EpisodeFileTest, ABadHeaderIsLeftAsItIsAndAFreshOneUsedBeside) {
  const std::vector<std::pair<std::string, std::function<void(std::vector<uint8_t>&)>>> cases = {
      {"does not start with \"CHNLEPIS\"", [](std::vector<uint8_t>& b) { b[0] = 'X'; }},
      {"format version 9", [](std::vector<uint8_t>& b) { b[8] = 9; }},
      {"header checksum mismatch", [](std::vector<uint8_t>& b) { b[21] ^= 1; }},
      {"truncated", [](std::vector<uint8_t>& b) { b.resize(10); }},
  };
  for (const auto& [reason, damage] : cases) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    commit(path_, 64, 0, 2);
    std::vector<uint8_t> bytes = read_bytes(path_);
    damage(bytes);
    write_bytes(path_, bytes);
    EpisodeStore store;
    EpisodeFile file(path_, test::sample_episode_header(), store);
    EXPECT_EQ(file.path(), fallback_episode_path(path_, test::sample_episode_header().model_fingerprint));
    ASSERT_EQ(file.notices().size(), 1u) << reason;
    EXPECT_NE(file.notices()[0].find(reason), std::string::npos) << file.notices()[0];
    EXPECT_TRUE(store.episodes().empty());
    EXPECT_EQ(read_bytes(path_), bytes) << reason;
  }
}

TEST_F(EpisodeFileTest, ATornLastRecordLosesOnlyThatRecordAtEveryByte) {
  commit(path_, 64, 0, 2);
  const size_t two = read_bytes(path_).size();
  commit(path_, 64, 2, 1);
  const std::vector<uint8_t> three = read_bytes(path_);
  for (size_t cut = two; cut < three.size(); ++cut) {
    write_bytes(path_, std::vector<uint8_t>(three.begin(), three.begin() + static_cast<std::ptrdiff_t>(cut)));
    {
      EpisodeStore store;
      EpisodeFile file(path_, test::sample_episode_header(), store);
      ASSERT_EQ(store.episodes().size(), 2u) << "cut at " << cut;
      EXPECT_EQ(file.notices().size(), cut == two ? 0u : 1u) << "cut at " << cut;
      for (size_t i = 0; i < 2; ++i) {
        Episode expected = test::sample_episode(i);
        expected.id = i + 1;
        EXPECT_EQ(record_of(store.episodes()[i]), record_of(expected));
      }
      EXPECT_EQ(fs::file_size(path_), two) << "the torn record is cut off";
      file.append(store.add(test::sample_episode(2)), store);
    }
    EXPECT_EQ(read_bytes(path_), three) << "cut at " << cut;
  }
  // A tail of zeros (a size that reached the disk before the data) is a torn record too.
  std::vector<uint8_t> zeros(three.begin(), three.begin() + static_cast<std::ptrdiff_t>(two));
  zeros.resize(three.size(), 0);
  write_bytes(path_, zeros);
  EpisodeStore store;
  EpisodeFile file(path_, test::sample_episode_header(), store);
  EXPECT_EQ(file.path(), path_);
  EXPECT_EQ(store.episodes().size(), 2u);
}

TEST_F(EpisodeFileTest, CorruptionInTheMiddleKeepsTheFileAndCopiesTheEpisodesBeforeIt) {
  commit(path_, 64, 0, 1);
  const size_t one = read_bytes(path_).size();
  commit(path_, 64, 1, 2);
  std::vector<uint8_t> bytes = read_bytes(path_);
  bytes[one + kEpisodeRecordFrameBytes + 30] ^= 0x40;  // in record 2's payload
  write_bytes(path_, bytes);
  const std::string fallback = fallback_episode_path(path_, test::sample_episode_header().model_fingerprint);
  {
    EpisodeStore store;
    EpisodeFile file(path_, test::sample_episode_header(), store);
    EXPECT_EQ(file.path(), fallback);
    ASSERT_EQ(file.notices().size(), 2u);
    EXPECT_NE(file.notices()[0].find(fmt::format("is corrupt (record 2 at offset {}: checksum mismatch", one)),
              std::string::npos)
        << file.notices()[0];
    EXPECT_NE(file.notices()[1].find("the 1 episodes read before the corruption are copied"), std::string::npos);
    ASSERT_EQ(store.episodes().size(), 1u);
    EXPECT_EQ(store.episodes()[0].id, 1u);
    EXPECT_EQ(store.add(test::sample_episode(5)).id, 2u);
  }
  EXPECT_EQ(read_bytes(path_), bytes);
  EpisodeStore store;
  EpisodeFile file(path_, test::sample_episode_header(), store);
  EXPECT_EQ(file.path(), fallback);
  EXPECT_EQ(store.episodes().size(), 1u);
}

TEST_F(EpisodeFileTest, ALockedStoreIsRefused) {
  EpisodeStore store;
  EpisodeFile file(path_, test::sample_episode_header(), store);
  EpisodeStore other;
  try {
    EpisodeFile second(path_, test::sample_episode_header(), other);
    FAIL() << "opened twice";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("in use by another Channel process"), std::string::npos) << error.what();
  }
}

// A child appends 1,000 episodes, telling the parent each id once append() has returned; it is
// killed with SIGKILL at a random moment. Every id it reported comes back intact (and perhaps the
// one whose append had returned but not yet been reported). With a small capacity the kill also
// lands in compactions, after which the newest `capacity` reported episodes must be there.
TEST_F(EpisodeFileTest, AWriterKilledAtARandomMomentLosesNoCommittedEpisode) {
  std::mt19937_64 random(std::random_device{}());
  int killed = 0;
  for (const size_t capacity : {2000, 2000, 2000, 2000, 40, 40, 40, 40}) {
    fs::remove(path_);
    fs::remove(path_ + ".tmp");
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(pipe_fds[0]);
      try {
        EpisodeStore store(capacity);
        EpisodeFile file(path_, test::sample_episode_header(), store);
        for (uint64_t seed = 0; seed < 1000; ++seed) {
          const Episode& e = store.add(test::sample_episode(seed, 3));
          file.append(e, store);
          const uint64_t id = e.id;
          if (::write(pipe_fds[1], &id, sizeof(id)) != sizeof(id)) ::_exit(3);
        }
      } catch (...) {
        ::_exit(2);
      }
      ::_exit(0);
    }
    ::close(pipe_fds[1]);
    // Let it commit some episodes first, then kill it somewhere in the next stretch.
    uint64_t reported = 0;
    const uint64_t kill_after = 1 + random() % 600;
    while (reported < kill_after && ::read(pipe_fds[0], &reported, sizeof(reported)) == sizeof(reported)) {
    }
    ::usleep(static_cast<useconds_t>(random() % 3000));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    for (uint64_t id; ::read(pipe_fds[0], &id, sizeof(id)) == sizeof(id);) reported = id;
    ::close(pipe_fds[0]);
    ASSERT_TRUE(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0)) << "status " << status;
    killed += WIFSIGNALED(status) ? 1 : 0;

    EpisodeStore store(capacity);
    EpisodeFile file(path_, test::sample_episode_header(), store);
    EXPECT_EQ(file.path(), path_);
    ASSERT_FALSE(store.episodes().empty());
    const uint64_t last = store.episodes().back().id;
    EXPECT_GE(last, reported);
    EXPECT_LE(last, reported + 1);
    EXPECT_EQ(store.episodes().size(), std::min<uint64_t>(last, capacity));
    for (const Episode& e : store.episodes()) {
      Episode expected = test::sample_episode(e.id - 1, 3);
      expected.id = e.id;
      ASSERT_EQ(record_of(e), record_of(expected)) << "episode " << e.id << " (capacity " << capacity << ")";
    }
    EXPECT_EQ(store.episodes().front().id, last - store.episodes().size() + 1);
  }
  EXPECT_GE(killed, 4) << "most rounds should end in the kill, not after the 1,000th episode";
}

}  // namespace
}  // namespace channel
