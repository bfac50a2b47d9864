// `channel chat`: an interactive session on the terminal, on top of the same Session the server
// drives. Thoughts are shown dimmed and apart from the answer; Ctrl-C aborts the running turn
// (a second Ctrl-C while idle, or Ctrl-D, quits).
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>

#include "cli/cli_common.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/text.h"
#include "engine/session.h"

namespace channel::cli {
namespace {

constexpr std::string_view kHelp =
    "commands: /reason (toggle thinking for the next turns), /probe QUESTION | CAND1 | CAND2 ...,\n"
    "          /system TEXT-or-JSON, /save PATH, /load PATH, /help, /quit\n";

struct ChatOptions {
  std::string model_path;
  BackendChoice backend;
  QuantizationChoice quantization;
  uint32_t max_tokens = 512;
  float temperature = 0.7f;
  uint64_t seed = 0;
};

// Replaces SentencePiece's U+2581 with spaces for display.
std::string display(std::string_view piece) {
  std::string out;
  for (size_t i = 0; i < piece.size(); ++i) {
    if (piece.compare(i, 3, "\xe2\x96\x81") == 0) {
      out += ' ';
      i += 2;
    } else {
      out += piece[i];
    }
  }
  return out;
}

class ConsoleEvents final : public SessionEvents {
 public:
  void token(int32_t, int64_t, std::string_view piece, bool thought) override {
    if (thought != in_thought_) {
      fmt::print("{}", thought ? "\x1b[2m[thinking] " : "\x1b[0m\n");
      in_thought_ = thought;
    }
    fmt::print("{}", display(piece));
    std::fflush(stdout);
  }
  void status(const StatusReport& report) override {
    if (report.status == EngineStatus::Encoding && report.total > 64) {
      fmt::print(stderr, "\rprefill {}/{} tokens", report.current, report.total);
      if (report.current == report.total) fmt::print(stderr, "\r\x1b[K");
    }
  }
  void turn_complete(const TurnSummary& summary) override {
    if (in_thought_) fmt::print("\x1b[0m");
    in_thought_ = false;
    static constexpr const char* kReasons[] = {"end of turn", "max tokens", "aborted", "tool call", "yield"};
    fmt::print("\n");
    fmt::print(stderr, "[{}: {} tokens, {:.1f} tok/s]\n", kReasons[static_cast<int>(summary.reason)], summary.tokens,
               summary.tokens_per_second);
    last_reason = summary.reason;
  }
  void tool_call(const ToolCall& call) override {
    fmt::print("\n[tool call] {} {}\n", display(call.name), call.json_arguments ? *call.json_arguments : display(call.arguments));
  }
  StopReason last_reason = StopReason::EndOfTurn;

 private:
  bool in_thought_ = false;
};

// Ctrl-C handling without a signal handler: SIGINT is blocked in every thread and one thread
// waits for it, then raises the session's abort flag (or quits when nothing runs).
class InterruptWatcher {
 public:
  InterruptWatcher(std::atomic<bool>& abort, std::atomic<bool>& busy) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    thread_ = std::thread([set, &abort, &busy] {
      while (true) {
        int signal = 0;
        if (sigwait(&set, &signal) != 0) return;
        if (busy) {
          abort = true;
        } else {
          fmt::print(stderr, "\n");
          std::_Exit(0);
        }
      }
    });
    thread_.detach();
  }

 private:
  std::thread thread_;
};

void run_probe(Session& session, std::string_view arguments, ConsoleEvents& events) {
  std::vector<std::string> parts;
  std::stringstream stream{std::string(arguments)};
  for (std::string part; std::getline(stream, part, '|');) {
    parts.emplace_back(trim(part, " "));
  }
  if (parts.empty() || parts[0].empty()) fail("usage: /probe QUESTION | CANDIDATE | CANDIDATE ...");
  const std::vector<std::string> candidates(parts.begin() + 1, parts.end());
  const ProbeResult r = session.probe(parts[0], candidates, candidates.empty() ? 8 : 1, events);
  if (candidates.empty()) {
    fmt::print("probe: \"{}\" ({:.2f} ms)\n", display(r.text), r.cost_ms);
  } else {
    fmt::print("probe: '{}' wins, confidence {:.3f}, entropy {:.3f} nats ({:.2f} ms)\n", candidates[r.index],
               r.confidence, r.entropy, r.cost_ms);
  }
}

// /save PATH and /load PATH: the whole session (stream, turn state, settings) to or from a file.
void run_snapshot_command(Session& session, std::string_view line) {
  const std::string path(trim(line.substr(5)));
  if (path.empty()) fail("usage: /save PATH or /load PATH");
  if (line.starts_with("/save")) {
    const SnapshotReport r = session.save_snapshot(path, "chat");
    if (r.outcome == SnapshotOutcome::Exists) {
      fmt::print("nothing new since the last save or load (clock {}); not written\n", r.clock);
    } else {
      fmt::print("saved {} (clock {}, {} active slots)\n", path, r.clock, r.active_slots);
    }
  } else {
    const SnapshotReport r = session.load_snapshot(path);
    fmt::print("loaded {} (clock {}, {} active slots)\n", path, r.clock, r.active_slots);
  }
}

void chat(const ChatOptions& o) {
  std::string model_path = o.model_path;
  use_default_model_if_none(model_path);
  auto model = load_model_verbose(model_path, chosen_load_conversion(o.quantization));
  const auto backend = make_chosen_backend(model, o.backend);
  SessionConfig config;
  config.max_tokens = o.max_tokens;
  config.sampler.temperature = o.temperature;
  config.sampler.seed = o.seed;
  Session session(model, *backend, config);
  std::atomic<bool> busy{false};
  const InterruptWatcher watcher(session.abort_flag(), busy);
  ConsoleEvents events;
  bool reason = false;
  fmt::print(stderr, "{}", kHelp);
  std::string line;
  while (true) {
    fmt::print("\x1b[1m> \x1b[0m");
    std::fflush(stdout);
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    busy = true;
    try {
      if (line == "/quit" || line == "/exit") break;
      if (line == "/help") {
        fmt::print("{}", kHelp);
      } else if (line == "/reason") {
        reason = !reason;
        fmt::print("thinking {}\n", reason ? "on" : "off");
      } else if (line.starts_with("/probe")) {
        run_probe(session, std::string_view(line).substr(6), events);
      } else if (line.starts_with("/system ")) {
        session.set_system(line.substr(8), events);
      } else if (line.starts_with("/save") || line.starts_with("/load")) {
        run_snapshot_command(session, line);
      } else if (line.starts_with("/")) {
        fmt::print("unknown command; {}", kHelp);
      } else {
        session.input_text(line, reason ? kInputFlagReason : 0, events);
        while (events.last_reason == StopReason::ElasticYield && !session.abort_flag()) {
          session.resume(false, events);  // the terminal has no one to interject: keep going
        }
      }
    } catch (const Error& e) {
      fmt::print(stderr, "channel: error: {}\n", e.what());
    }
    busy = false;
  }
}

}  // namespace

void register_chat_command(CLI::App& app) {
  auto o = std::make_shared<ChatOptions>();
  CLI::App* cmd = app.add_subcommand("chat", "Chat with a model on the terminal (Ctrl-C aborts a turn)");
  add_model_option_with_default(*cmd, o->model_path);
  cmd->add_option("-n,--max-tokens", o->max_tokens, "response tokens per turn")->capture_default_str();
  cmd->add_option("--temp", o->temperature, "sampling temperature; 0 or less is greedy")->capture_default_str();
  cmd->add_option("--seed", o->seed, "sampling seed")->capture_default_str();
  add_backend_options(*cmd, o->backend);
  add_quantization_options(*cmd, o->quantization);
  cmd->callback([o] { chat(*o); });
}

}  // namespace channel::cli
