// Writes that survive a crash (kill -9, power loss) in a known state, for the files Channel keeps
// between runs (snapshots, the episode store). Every failure is channel::Error naming the path
// and the OS reason.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace channel {

using ByteSink = std::function<void(std::span<const uint8_t>)>;

// Throws unless `path` can name a file (not empty, no NUL byte).
void require_usable_path(const std::string& path);

// Writes all of `bytes` to `fd` (retrying short writes and EINTR); `path` is for messages.
void write_all(int fd, std::span<const uint8_t> bytes, const std::string& path);

// fsync(fd); `path` is for messages.
void sync_file(int fd, const std::string& path);

// fsyncs the folder holding `path`: a created or renamed file is durable only once its
// directory entry is on disk too.
void sync_parent_directory(const std::string& path);

// Writes `temp` with what `write` gives the sink, fsyncs it, renames it to `path` and fsyncs the
// directory, so `path` is the old file or the whole new one, even across a crash. On failure the
// temp file is removed and `path` is as it was.
void replace_file(const std::string& path, const std::string& temp, const std::function<void(const ByteSink&)>& write);

}  // namespace channel
