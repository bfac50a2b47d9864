// Where OP_SNAPSHOT_SAVE and OP_SNAPSHOT_LOAD read and write. Without a snapshot directory a
// client's path is used as given (relative paths from the working directory), as the original
// does. With one (--snapshot-dir), a client's path must stay inside it: relative, no `..`
// component, and no symbolic link on the way (the folders, the file, the save's temporary
// file) that leads outside; anything else is refused with channel::Error before any file is
// touched.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace channel::server {

class SnapshotPaths {
 public:
  SnapshotPaths() = default;  // unconfined
  // Throws channel::Error when `directory` is not an existing directory.
  explicit SnapshotPaths(const std::string& directory);

  // The file to use for a client's path (throws channel::Error for one that leaves the directory).
  std::string for_save(std::string_view client_path) const;
  std::string for_load(std::string_view client_path) const;

  bool confined() const { return root_.has_value(); }

 private:
  std::string confine(std::string_view client_path, std::string_view action, bool saving) const;

  std::optional<std::filesystem::path> root_;  // canonical
};

}  // namespace channel::server
