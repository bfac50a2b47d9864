// The episode store on disk (docs/memory-format.md), so that no committed episode is lost: each
// episode is appended as one checksummed record and fsynced before append() returns, and a
// record a crash cut short is found by its length and checksum on the next open and cut off.
// The file is rewritten (a temp file, fsync, rename) only to drop episodes past the capacity.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/episode_format.h"
#include "engine/episode_store.h"

namespace channel {

// Where the store of the model with `model_fingerprint` lives when `path` cannot be used for it
// (another model's store, or a corrupt one): PATH.<fingerprint as 16 hex digits>.
std::string fallback_episode_path(const std::string& path, uint64_t model_fingerprint);

class EpisodeFile {
 public:
  // Opens the store at `path` for the model `header` describes, creating it when missing, and
  // restores its episodes into `store` (empty; the newest store.capacity() of them are kept).
  // A store written for another model, or one whose header is bad or that is corrupt before its
  // last record, is left as it is and fallback_episode_path() is used instead (created with the
  // episodes before the corruption when it does not exist yet); a torn last record is cut off.
  // notices() has one line for each of these. Throws channel::Error when neither file can be
  // used, the file is locked by another process, or on any I/O failure.
  EpisodeFile(const std::string& path, EpisodeFileHeader header, EpisodeStore& store);
  ~EpisodeFile();
  EpisodeFile(const EpisodeFile&) = delete;
  EpisodeFile& operator=(const EpisodeFile&) = delete;

  // Appends `episode`, just added to `store`, and fsyncs it. When the file then holds more than
  // twice store.capacity() records it is rewritten with the store's episodes, which also saves
  // their recall counts and times (appended records keep those as they were at commit). On a
  // failed write the file is cut back to its last whole record and channel::Error is thrown.
  void append(const Episode& episode, const EpisodeStore& store);

  const std::string& path() const { return path_; }  // the file in use
  const std::vector<std::string>& notices() const { return notices_; }
  size_t records() const { return records_; }  // in the file, dropped ones included until a rewrite

 private:
  // Why `path` cannot be this model's store, or nothing when it was opened (or created) and its
  // episodes restored into `store`. `carried` gets the good episodes of a store corrupt in the
  // middle.
  std::optional<std::string> try_open(const std::string& path, EpisodeStore& store, std::vector<Episode>& carried);
  // Opens `path` read-write as the file in use, locked against other processes.
  void open_locked(const std::string& path);
  void close_file();
  // Replaces `path` with the header and `episodes` (crash-safe) and makes it the file in use.
  void rewrite(const std::string& path, const std::vector<const Episode*>& episodes);
  void compact_if_over(const EpisodeStore& store);

  EpisodeFileHeader header_;
  std::string path_;
  int fd_ = -1;
  size_t length_ = 0;   // bytes of whole records: where the next one goes
  size_t records_ = 0;
  std::vector<std::string> notices_;
};

}  // namespace channel
