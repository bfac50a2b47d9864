#include "server/snapshot_paths.h"

#include <algorithm>
#include <system_error>
#include <vector>

#include "core/error.h"
#include "engine/snapshot.h"

namespace channel::server {
namespace fs = std::filesystem;
namespace {

bool inside(const fs::path& path, const fs::path& root) {
  return std::mismatch(root.begin(), root.end(), path.begin(), path.end()).first == root.end();
}

// Where `path` leads once every symbolic link is followed, a dangling one at the end too (creating
// the file would follow it); missing components stay as they are.
fs::path resolved(const fs::path& path, int links_left = 40) {
  std::error_code error;
  if (fs::is_symlink(fs::symlink_status(path, error))) {
    if (links_left == 0) fail("too many symbolic links at '{}'", path.string());
    const fs::path target = fs::read_symlink(path, error);
    if (error) fail("cannot read the symbolic link '{}': {}", path.string(), error.message());
    return resolved(target.is_absolute() ? target : path.parent_path() / target, links_left - 1);
  }
  fs::path result = fs::weakly_canonical(path, error);
  if (error) fail("cannot resolve '{}': {}", path.string(), error.message());
  return result;
}

}  // namespace

SnapshotPaths::SnapshotPaths(const std::string& directory) {
  std::error_code error;
  if (!fs::is_directory(directory, error)) fail("--snapshot-dir '{}' is not a directory", directory);
  root_ = fs::canonical(directory, error);
  if (error) fail("--snapshot-dir '{}': {}", directory, error.message());
}

std::string SnapshotPaths::for_save(std::string_view client_path) const {
  return confine(client_path, "save", /*saving=*/true);
}

std::string SnapshotPaths::for_load(std::string_view client_path) const {
  return confine(client_path, "load", /*saving=*/false);
}

std::string SnapshotPaths::confine(std::string_view client_path, std::string_view action, bool saving) const {
  const std::string given(client_path);
  if (!root_) return given;
  const auto refuse = [&](std::string_view why) {
    fail("cannot {} snapshot '{}': {} (--snapshot-dir confines snapshots to '{}')", action, given, why,
         root_->string());
  };
  if (given.empty()) refuse("the path is empty");
  if (given.find('\0') != std::string::npos) refuse("the path contains a NUL byte");
  const fs::path relative(given);
  if (relative.is_absolute()) refuse("the path is absolute; give it relative to the snapshot directory");
  if (std::find(relative.begin(), relative.end(), fs::path("..")) != relative.end()) refuse("the path has a '..' component");
  const fs::path full = *root_ / relative;
  // Symbolic links in the folders, on the file itself, or on the temporary file a save writes
  // first (opening it follows a link), must all stay inside.
  std::vector<fs::path> reached = {full};
  if (saving) reached.emplace_back(snapshot_temp_path(full.string()));
  for (const fs::path& path : reached) {
    if (!inside(resolved(path), *root_)) refuse("a symbolic link on the way leads outside the snapshot directory");
  }
  return full.string();
}

}  // namespace channel::server
