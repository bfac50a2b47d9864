// Client snapshot paths with and without --snapshot-dir: as given without one; with one, only
// paths that stay inside it, also through symbolic links (folders, the file, the temporary file
// a save writes first).
#include "server/snapshot_paths.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "test_models.h"

namespace channel::server {
namespace {

namespace fs = std::filesystem;
using channel::testing::TempDir;

// Snapshot directory `root` (with a folder `sub`) and a folder `outside` next to it.
class ConfinedPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root_ / "sub");
    fs::create_directories(outside_);
    std::ofstream(outside_ / "secret.bin") << "not a snapshot";
  }

  std::string refusal(const SnapshotPaths& paths, const std::string& path, bool saving) {
    try {
      saving ? paths.for_save(path) : paths.for_load(path);
    } catch (const Error& error) {
      return error.what();
    }
    return "not refused";
  }

  TempDir dir_;
  const fs::path root_ = fs::path(dir_.file("snapshots"));
  const fs::path outside_ = fs::path(dir_.file("outside"));
};

TEST(SnapshotPaths, WithoutADirectoryPathsAreUsedAsGiven) {
  const SnapshotPaths paths;
  EXPECT_FALSE(paths.confined());
  for (const std::string path : {"x.bin", ".memory/.snapshot.bin", "../up.bin", "/abs/x.bin"}) {
    EXPECT_EQ(paths.for_save(path), path);
    EXPECT_EQ(paths.for_load(path), path);
  }
}

TEST(SnapshotPaths, TheDirectoryMustExist) {
  TempDir dir;
  EXPECT_THROW(SnapshotPaths(dir.file("missing")), Error);
  std::ofstream(dir.file("file")) << "x";
  EXPECT_THROW(SnapshotPaths(dir.file("file")), Error);
}

TEST_F(ConfinedPaths, PathsInsideAreRelativeToTheDirectory) {
  const SnapshotPaths paths(root_.string());
  EXPECT_TRUE(paths.confined());
  const fs::path root = fs::canonical(root_);
  EXPECT_EQ(paths.for_save("a.bin"), (root / "a.bin").string());
  EXPECT_EQ(paths.for_load("sub/a.bin"), (root / "sub" / "a.bin").string());
  EXPECT_EQ(paths.for_save("./sub/a.bin"), (root / "." / "sub" / "a.bin").string());
  // A symbolic link that stays inside is fine.
  fs::create_directory_symlink(root / "sub", root / "inner");
  EXPECT_EQ(paths.for_save("inner/a.bin"), (root / "inner" / "a.bin").string());
}

TEST_F(ConfinedPaths, PathsThatLeaveAreRefusedWithTheReason) {
  const SnapshotPaths paths(root_.string());
  for (const bool saving : {true, false}) {
    EXPECT_NE(refusal(paths, "", saving).find("the path is empty"), std::string::npos);
    EXPECT_NE(refusal(paths, (outside_ / "x.bin").string(), saving).find("absolute"), std::string::npos);
    EXPECT_NE(refusal(paths, "../outside/x.bin", saving).find("'..'"), std::string::npos);
    // Even when it would come back inside: `..` is refused as such.
    EXPECT_NE(refusal(paths, "sub/../a.bin", saving).find("'..'"), std::string::npos);
    EXPECT_EQ(refusal(paths, "a.bin", saving), "not refused");
  }
  const std::string message = refusal(paths, "../x.bin", true);
  EXPECT_NE(message.find("cannot save snapshot '../x.bin'"), std::string::npos) << message;
  EXPECT_NE(message.find("--snapshot-dir"), std::string::npos) << message;
}

TEST_F(ConfinedPaths, SymbolicLinksOutOfTheDirectoryAreRefused) {
  const SnapshotPaths paths(root_.string());
  const std::string escape = "a symbolic link on the way leads outside";
  // A folder link, a file link, and a dangling link where a save would create its temporary file.
  fs::create_directory_symlink(outside_, root_ / "out");
  fs::create_symlink(outside_ / "secret.bin", root_ / "secret.bin");
  fs::create_symlink(outside_ / "created-by-the-save", root_ / "next.bin.tmp");
  for (const bool saving : {true, false}) {
    EXPECT_NE(refusal(paths, "out/x.bin", saving).find(escape), std::string::npos);
    EXPECT_NE(refusal(paths, "secret.bin", saving).find(escape), std::string::npos);
  }
  EXPECT_NE(refusal(paths, "next.bin", /*saving=*/true).find(escape), std::string::npos);
  EXPECT_EQ(refusal(paths, "next.bin", /*saving=*/false), "not refused");  // a load reads next.bin only
}

}  // namespace
}  // namespace channel::server
