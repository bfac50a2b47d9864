// `serve` over pipes, on a synthesized Gemma 4 model with the real vocabulary, with failures
// injected through the backend: a request that throws anything is answered with OP_ERROR and
// the engine keeps serving; an exception of unknown type ends serving with code 1, not an abort.
#include "server/server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <new>
#include <ostream>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "backend/cpu/cpu_backend.h"
#include "faulty_backend.h"
#include "peer_vocab.h"
#include "protocol/frame_reader.h"
#include "protocol/inbound.h"
#include "protocol/outbound.h"
#include "test_models.h"

namespace channel::server {
namespace {

namespace p = channel::protocol;
using channel::testing::FaultyBackend;
using channel::testing::TempDir;

struct Pipe {
  int read_end = -1, write_end = -1;
  Pipe() {
    int fds[2];
    if (::pipe(fds) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
    read_end = fds[0];
    write_end = fds[1];
  }
  ~Pipe() {
    close_read();
    close_write();
  }
  void close_read() {
    if (read_end >= 0) ::close(read_end);
    read_end = -1;
  }
  void close_write() {
    if (write_end >= 0) ::close(write_end);
    write_end = -1;
  }
};

struct Reply {
  uint16_t msg_id;
  p::OutboundMessage message;
};

// The host's side of the pipes: writes requests, reads replies.
class Host {
 public:
  Host(int input_fd, int output_fd) : input_fd_(input_fd), output_fd_(output_fd) {}

  void send(uint16_t msg_id, const p::InboundMessage& message) {
    const auto frame = p::encode_frame(msg_id, message);
    ASSERT_EQ(::write(input_fd_, frame.data(), frame.size()), static_cast<ssize_t>(frame.size()));
  }

  // Replies up to and including the first of `msg_id` that is of type T; fails on EOF.
  template <typename T>
  T wait_for(uint16_t msg_id) {
    while (true) {
      const Reply reply = next();
      if (reply.msg_id == msg_id && std::holds_alternative<T>(reply.message)) return std::get<T>(reply.message);
      if (reply.msg_id == msg_id && std::holds_alternative<p::ErrorMessage>(reply.message)) {
        ADD_FAILURE() << "request " << msg_id << " failed: " << std::get<p::ErrorMessage>(reply.message).message;
        return T{};
      }
    }
  }

  // The tokens (id and clock) streamed for `msg_id`, up to its TURN_COMPLETE.
  std::vector<std::pair<uint32_t, uint64_t>> turn(uint16_t msg_id) {
    std::vector<std::pair<uint32_t, uint64_t>> tokens;
    while (true) {
      const Reply reply = next();
      if (reply.msg_id != msg_id) continue;
      if (auto* token = std::get_if<p::StreamToken>(&reply.message)) tokens.emplace_back(token->token_id, token->clock);
      if (std::holds_alternative<p::TurnComplete>(reply.message)) return tokens;
      if (auto* error = std::get_if<p::ErrorMessage>(&reply.message)) {
        ADD_FAILURE() << "request " << msg_id << " failed: " << error->message;
        return tokens;
      }
    }
  }

  // The OP_ERROR answering `msg_id`, if one comes before the PONG answering `ping_id`.
  std::optional<p::ErrorMessage> error_before_pong(uint16_t msg_id, uint16_t ping_id) {
    std::optional<p::ErrorMessage> found;
    while (true) {
      const Reply reply = next();
      if (reply.msg_id == ping_id && std::holds_alternative<p::Pong>(reply.message)) return found;
      if (auto* error = std::get_if<p::ErrorMessage>(&reply.message); error && reply.msg_id == msg_id) found = *error;
    }
  }

  // The OP_ERROR answering `msg_id`, after the replies before it; fails if another reply of
  // that request ends it (TURN_COMPLETE, AUTONOMIC_RESULT, SNAPSHOT_STATUS).
  p::ErrorMessage wait_for_error(uint16_t msg_id) {
    while (true) {
      const Reply reply = next();
      if (reply.msg_id != msg_id) continue;
      if (auto* error = std::get_if<p::ErrorMessage>(&reply.message)) return *error;
      if (std::holds_alternative<p::TurnComplete>(reply.message) ||
          std::holds_alternative<p::AutonomicResult>(reply.message) ||
          std::holds_alternative<p::SnapshotStatus>(reply.message)) {
        ADD_FAILURE() << "request " << msg_id << " was answered, not refused";
        return {};
      }
    }
  }

 private:
  Reply next() {
    while (true) {
      if (auto result = reader_.pop()) {
        const auto& frame = std::get<p::Frame>(*result);
        auto decoded = p::decode_outbound(frame.header.opcode, frame.payload);
        if (!decoded.ok()) throw std::runtime_error("undecodable reply: " + decoded.error().reason);
        return Reply{frame.header.msg_id, decoded.value()};
      }
      uint8_t buffer[4096];
      const ssize_t n = ::read(output_fd_, buffer, sizeof buffer);
      if (n <= 0) throw std::runtime_error("the engine's output ended");
      reader_.push(std::span(buffer, static_cast<size_t>(n)));
    }
  }

  int input_fd_, output_fd_;
  p::FrameReader reader_;
};

class ServeTest : public ::testing::Test {
 public:
  // A session on the CPU backend behind a FaultyBackend, greedy and with short bursts.
  struct Engine {
    std::shared_ptr<const Model> model;
    cpu::CpuBackend cpu;
    FaultyBackend faulty;
    Session session;
    explicit Engine(const std::string& path)
        : model(Model::load(path)), cpu(model, 2), faulty(cpu), session(model, faulty, greedy()) {}
    static SessionConfig greedy() {
      SessionConfig config;
      config.max_tokens = 4;
      config.sampler.temperature = 0.0f;
      return config;
    }
  };

 protected:
  void SetUp() override {
    const auto vocab = channel::testing::peer_gemma4_vocab();
    if (!vocab) GTEST_SKIP() << "llama.cpp peer not installed (scripts/install-peer.sh)";
    SynthOptions o = default_synth_options(ModelArch::Gemma4);
    o.n_layer = 2;
    o.sliding_period = 2;
    o.n_embd = 64;
    o.n_ff = 64;
    o.vocab_path = vocab->string();
    model_path_ = channel::testing::synthesize(dir_, o, "m.gguf");
  }

  // An Engine served over pipes on a thread of its own, ready (its startup STATUS read).
  struct ServedEngine {
    Engine engine;
    Pipe input, output;
    Host host{input.write_end, output.read_end};
    SnapshotPaths snapshot_paths;
    int exit_code = -1;
    std::thread server{[this] {
      exit_code = serve(engine.session, ServerOptions{.input_fd = input.read_end, .output_fd = output.write_end,
                                                      .snapshot_paths = snapshot_paths});
    }};

    explicit ServedEngine(const std::string& path, SnapshotPaths paths = {})
        : engine(path), snapshot_paths(std::move(paths)) {
      host.wait_for<p::Status>(0);
    }
    ~ServedEngine() {
      if (server.joinable()) finish();
    }
    // EOF on the engine's input; serve's exit code once it has returned.
    int finish() {
      input.close_write();
      server.join();
      return exit_code;
    }
  };

  TempDir dir_;
  std::string model_path_;
};

p::StreamInput text_input(std::string text) { return p::StreamInput{.mode = p::MODE_TEXT, .text = std::move(text)}; }

p::ProbeAutonomic generative_probe() { return p::ProbeAutonomic{.max_decode_tokens = 4, .prompt = "Say something"}; }

// A failure a backend may raise, named for the test's name.
struct Failure {
  const char* name;
  std::function<void()> thrower;
  friend void PrintTo(const Failure& failure, std::ostream* out) { *out << failure.name; }
};

class ServeSurvivesFailure : public ServeTest, public ::testing::WithParamInterface<Failure> {};

TEST_P(ServeSurvivesFailure, EveryRequestIsAnsweredAndServingGoesOn) {
  // What a session that never saw the failed request answers.
  std::vector<std::pair<uint32_t, uint64_t>> expected;
  {
    ServedEngine reference(model_path_);
    reference.host.send(1, text_input("Hello again"));
    expected = reference.host.turn(1);
  }
  ASSERT_FALSE(expected.empty());

  ServedEngine served(model_path_);
  Host& host = served.host;
  served.engine.faulty.fail_next_forward(GetParam().thrower);
  host.send(1, text_input("Hello"));
  const std::string turn_error = host.wait_for_error(1).message;
  EXPECT_NE(turn_error.find("the request failed"), std::string::npos) << turn_error;
  host.send(2, p::Ping{});
  host.wait_for<p::Pong>(2);
  // The failed prefill left no trace: the next turn is the reference's, clocks included.
  host.send(3, text_input("Hello again"));
  EXPECT_EQ(host.turn(3), expected);

  // A probe that fails halfway is rolled back: the next probe runs (it could not start while
  // the stream was still transient) and finds the stream as it was.
  host.send(4, generative_probe());
  const auto before = host.wait_for<p::AutonomicResult>(4);
  served.engine.faulty.fail_next_forward(GetParam().thrower);
  host.send(5, generative_probe());
  host.wait_for_error(5);
  host.send(6, generative_probe());
  const auto after = host.wait_for<p::AutonomicResult>(6);
  EXPECT_EQ(after.text, before.text);

  EXPECT_EQ(served.finish(), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Exceptions, ServeSurvivesFailure,
    ::testing::Values(Failure{"bad_alloc", [] { throw std::bad_alloc(); }},
                      Failure{"length_error", [] { throw std::length_error("vector::_M_default_append"); }},
                      Failure{"system_error",
                              [] {
                                throw std::system_error(
                                    std::make_error_code(std::errc::resource_unavailable_try_again),
                                    "cannot start a thread");
                              }}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(ServeTest, SetConfigWithANonFiniteValueIsRefusedAndChangesNothing) {
  ServedEngine served(model_path_);
  Host& host = served.host;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  host.send(1, p::SetConfig{.thinking_budget = 64, .temperature = nan, .top_p = 0.9f, .max_tokens = 8});
  host.send(2, p::Ping{});
  const auto error = host.error_before_pong(1, 2);
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->message.find("temperature"), std::string::npos) << error->message;
  host.send(3, p::SetConfig{.thinking_budget = 64, .temperature = 0.5f, .top_p = 0.9f, .max_tokens = 8,
                            .min_p = 0.1f, .repeat_penalty = std::numeric_limits<float>::infinity()});
  host.send(4, p::Ping{});
  EXPECT_TRUE(host.error_before_pong(3, 4).has_value());
  served.finish();  // the session is read once serving has ended
  EXPECT_EQ(served.engine.session.config(), Engine::greedy());
}

// Serves one request that fails with an exception of unknown type, then a PING; returns the
// exit code for the death test: serve's, or 3 if the failed request was not answered.
int serve_through_unknown_exception(const std::string& model_path) {
  ServeTest::Engine engine(model_path);
  Pipe input, output;
  engine.faulty.fail_next_forward([] { throw 42; });
  Host host(input.write_end, output.read_end);
  host.send(1, text_input("Hello"));
  host.send(2, p::Ping{});
  // Served on this thread: the requests are in the pipe, which stays open (no EOF).
  ServerOptions options;
  options.input_fd = input.read_end;
  options.output_fd = output.write_end;
  const int code = serve(engine.session, options);
  host.wait_for<p::Status>(0);
  host.wait_for_error(1);
  return ::testing::Test::HasFailure() ? 3 : code;
}

// Ends a threadsafe death test's child, which ran SetUp again (its own model directory) and,
// leaving through std::exit, never runs the fixture's destructor: the directory goes first.
[[noreturn]] void exit_removing_model_directory(const std::string& model_path, int code) {
  std::filesystem::remove_all(std::filesystem::path(model_path).parent_path());
  std::exit(code);
}

// An exception of unknown type: the request is answered, then serving ends with code 1 and a
// message (an exception escaping serve would abort the process instead).
TEST_F(ServeTest, ExceptionOfUnknownTypeAnswersThenEndsServingWithCodeOne) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(exit_removing_model_directory(model_path_, serve_through_unknown_exception(model_path_)),
              ::testing::ExitedWithCode(1), "exception of unknown type");
}

TEST_F(ServeTest, SnapshotPathsOutsideTheSnapshotDirectoryAreRefusedAndInsideOnesWork) {
  TempDir snapshots;
  const std::filesystem::path root = std::filesystem::path(snapshots.file("kept.bin")).parent_path();
  ServedEngine served(model_path_, SnapshotPaths(root.string()));
  Host& host = served.host;
  host.send(2, p::SnapshotSave{.path = "../escaped.bin"});
  EXPECT_NE(host.wait_for_error(2).message.find("'..'"), std::string::npos);
  host.send(3, p::SnapshotLoad{.path = "/etc/hostname"});
  EXPECT_NE(host.wait_for_error(3).message.find("absolute"), std::string::npos);
  host.send(4, p::SnapshotSave{.path = "kept.bin"});
  EXPECT_EQ(host.wait_for<p::SnapshotStatus>(4).status, p::SNAPSHOT_STATUS_SAVED);
  EXPECT_TRUE(std::filesystem::exists(snapshots.file("kept.bin")));
  EXPECT_FALSE(std::filesystem::exists(root.parent_path() / "escaped.bin"));
  host.send(5, p::SnapshotLoad{.path = "kept.bin"});
  EXPECT_EQ(host.wait_for<p::SnapshotStatus>(5).status, p::SNAPSHOT_STATUS_LOADED);
}

}  // namespace
}  // namespace channel::server
