#include "engine/episode_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/durable_file.h"
#include "core/error.h"
#include "core/mapped_file.h"

namespace channel {
namespace {

// Whether `path` names something (std::filesystem::exists throws for a folder it cannot read).
bool file_exists(const std::string& path) {
  std::error_code error;
  const bool exists = std::filesystem::exists(path, error);
  if (error) fail("cannot look up '{}': {}", path, error.message());
  return exists;
}

std::string describe_widths(const EpisodeFileHeader& h) {
  return fmt::format("centroid width {}, {} KV layers", h.centroid_width, h.kv_widths.size());
}

}  // namespace

std::string fallback_episode_path(const std::string& path, uint64_t model_fingerprint) {
  return fmt::format("{}.{:016x}", path, model_fingerprint);
}

EpisodeFile::EpisodeFile(const std::string& path, EpisodeFileHeader header, EpisodeStore& store)
    : header_(std::move(header)) {
  require_usable_path(path);
  if (!store.episodes().empty()) fail("the episode store to restore into already holds episodes");
  std::vector<Episode> carried;
  if (const auto why = try_open(path, store, carried)) {
    const std::string fallback = fallback_episode_path(path, header_.model_fingerprint);
    notices_.push_back(fmt::format("episodic memory: '{}' {}; it is left as it is, '{}' is used instead", path, *why, fallback));
    if (!file_exists(fallback)) {
      std::vector<const Episode*> episodes;
      for (const Episode& e : carried) episodes.push_back(&store.restore(e));
      rewrite(fallback, episodes);
      if (!carried.empty()) {
        notices_.push_back(fmt::format("episodic memory: the {} episodes read before the corruption are copied to '{}'",
                                       carried.size(), fallback));
      }
    } else if (std::vector<Episode> ignored; const auto why_not = try_open(fallback, store, ignored)) {
      fail("episodic memory: '{}' {}, and '{}' {}", path, *why, fallback, *why_not);
    }
  }
  compact_if_over(store);
}

EpisodeFile::~EpisodeFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<std::string> EpisodeFile::try_open(const std::string& path, EpisodeStore& store,
                                                 std::vector<Episode>& carried) {
  if (!file_exists(path)) {
    rewrite(path, {});
    return std::nullopt;
  }
  open_locked(path);
  EpisodeStore loaded(store.capacity());
  EpisodeFileScan scan;
  {
    const MappedFile file(path);
    size_t header_length = 0;
    EpisodeFileHeader found;
    try {
      found = parse_episode_header(file.bytes(), header_length);
    } catch (const Error& error) {
      close_file();
      return fmt::format("is not a usable episode store ({})", error.what());
    }
    if (found.model_fingerprint != header_.model_fingerprint) {
      close_file();
      return fmt::format("was written for another model (fingerprint {:016x}, this model's is {:016x})",
                         found.model_fingerprint, header_.model_fingerprint);
    }
    if (!found.fits(header_)) {
      close_file();
      return fmt::format("was written with another geometry ({}; this engine's: {})", describe_widths(found),
                         describe_widths(header_));
    }
    scan = scan_episode_file(file.bytes(), [&](Episode&& e) { loaded.restore(std::move(e)); });
  }
  if (scan.problem && !scan.torn_tail) {
    close_file();
    carried.assign(loaded.episodes().begin(), loaded.episodes().end());
    return fmt::format("is corrupt ({})", *scan.problem);
  }
  if (scan.problem) {
    if (::ftruncate(fd_, static_cast<off_t>(scan.good_length)) != 0) {
      fail("cannot cut the torn last record off '{}': {}", path, std::strerror(errno));
    }
    sync_file(fd_, path);
    notices_.push_back(fmt::format("episodic memory: cut a torn last record off '{}' (a write a crash cut short: {})",
                                   path, *scan.problem));
  }
  for (const Episode& e : loaded.episodes()) store.restore(e);
  header_.version = scan.header.version;  // records appended keep the file's format until a rewrite
  length_ = scan.good_length;
  records_ = scan.records;
  if (::lseek(fd_, static_cast<off_t>(length_), SEEK_SET) < 0) fail("cannot seek in '{}': {}", path, std::strerror(errno));
  return std::nullopt;
}

void EpisodeFile::open_locked(const std::string& path) {
  close_file();
  fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd_ < 0) fail("cannot open '{}': {}", path, std::strerror(errno));
  path_ = path;
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    close_file();
    if (error == EWOULDBLOCK) fail("'{}' is in use by another Channel process", path);
    fail("cannot lock '{}': {}", path, std::strerror(error));
  }
}

void EpisodeFile::close_file() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void EpisodeFile::rewrite(const std::string& path, const std::vector<const Episode*>& episodes) {
  EpisodeFileHeader rewritten = header_;
  rewritten.version = kEpisodeFileVersion;  // a rewritten store is in this build's format
  size_t length = 0;
  replace_file(path, path + ".tmp", [&](const ByteSink& sink) {
    const auto header = encode_episode_header(rewritten);
    sink(header);
    length = header.size();
    for (const Episode* e : episodes) {
      const auto record = encode_episode_record(*e, rewritten);
      sink(record);
      length += record.size();
    }
  });
  header_ = rewritten;
  open_locked(path);
  length_ = length;
  records_ = episodes.size();
  if (::lseek(fd_, static_cast<off_t>(length_), SEEK_SET) < 0) fail("cannot seek in '{}': {}", path, std::strerror(errno));
}

void EpisodeFile::compact_if_over(const EpisodeStore& store) {
  if (records_ <= 2 * store.capacity()) return;
  std::vector<const Episode*> episodes;
  for (const Episode& e : store.episodes()) episodes.push_back(&e);
  rewrite(path_, episodes);
}

void EpisodeFile::append(const Episode& episode, const EpisodeStore& store) {
  const std::vector<uint8_t> record = encode_episode_record(episode, header_);
  try {
    write_all(fd_, record, path_);
    sync_file(fd_, path_);
  } catch (const Error&) {
    // A part-written record would sit before every later one: cut it off.
    if (::ftruncate(fd_, static_cast<off_t>(length_)) == 0) ::lseek(fd_, static_cast<off_t>(length_), SEEK_SET);
    throw;
  }
  length_ += record.size();
  ++records_;
  compact_if_over(store);
}

}  // namespace channel
