#include "server/server.h"

#include <fmt/format.h>

#include <cmath>
#include <csignal>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "core/elapsed.h"
#include "core/error.h"
#include "protocol/inbound.h"
#include "protocol/outbound.h"
#include "server/frame_writer.h"
#include "server/input_reader.h"

namespace channel::server {
namespace {

namespace p = channel::protocol;

// Session events become frames tagged with the msg_id of the request that caused them.
class FrameEvents final : public SessionEvents {
 public:
  FrameEvents(FrameWriter& writer, uint16_t msg_id, const ServerOptions& options)
      : writer_(writer), msg_id_(msg_id), options_(options) {}

  void send(const p::OutboundMessage& message) { writer_.send(p::encode_frame(msg_id_, message)); }

  void token(int32_t id, int64_t clock, std::string_view piece, bool thought) override {
    p::StreamToken frame;
    frame.kind = thought ? p::StreamKind::Thought : p::StreamKind::Content;
    frame.token_id = static_cast<uint32_t>(id);
    frame.clock = static_cast<uint64_t>(clock);
    frame.text = std::string(piece.substr(0, UINT16_MAX));
    send(frame);
  }
  void status(const StatusReport& report) override {
    send(p::Status{static_cast<p::EngineStatus>(report.status), options_.is_gpu, report.active_slots,
                   report.archived_episodes, report.flags,
                   report.tokens_per_second, report.current, report.total});
  }
  void turn_complete(const TurnSummary& summary) override {
    send(p::TurnComplete{summary.tokens, summary.elapsed_ms, summary.tokens_per_second,
                         static_cast<p::StopReason>(summary.reason)});
  }
  void tool_call(const ToolCall& call) override {
    const bool as_json = options_.tool_call_json && call.json_arguments;
    send(p::ToolCall{1, call.name, as_json ? *call.json_arguments : call.arguments});
  }

 private:
  FrameWriter& writer_;
  uint16_t msg_id_;
  const ServerOptions& options_;
};

// A setting that is not a finite number (NaN, infinity) would turn every distribution the
// sampler draws from into NaNs: the frame is refused before anything changes (the original
// takes it).
void require_finite(std::string_view name, std::optional<float> value) {
  if (value && !std::isfinite(*value)) fail("SET_CONFIG: {} is {}, not a finite number", name, *value);
}

void apply_config(const p::SetConfig& c, SessionConfig& config) {
  require_finite("temperature", c.temperature);
  require_finite("top_p", c.top_p);
  require_finite("quiescence_threshold", c.quiescence_threshold);
  require_finite("min_p", c.min_p);
  require_finite("repeat_penalty", c.repeat_penalty);
  require_finite("frequency_penalty", c.frequency_penalty);
  require_finite("presence_penalty", c.presence_penalty);
  // Partial payloads: the decoder leaves the fields the payload did not reach unset.
  config.thinking_budget = c.thinking_budget;
  config.sampler.temperature = c.temperature;
  config.sampler.top_p = c.top_p;
  config.quiescence_threshold = c.quiescence_threshold;
  config.max_tokens = c.max_tokens;
  if (c.min_p) config.sampler.min_p = *c.min_p;
  if (c.repeat_penalty) config.sampler.repeat_penalty = *c.repeat_penalty;
  if (c.repeat_last_n) config.sampler.repeat_last_n = static_cast<int>(std::min<uint32_t>(*c.repeat_last_n, 1 << 20));
  if (c.frequency_penalty) config.sampler.frequency_penalty = *c.frequency_penalty;
  if (c.presence_penalty) config.sampler.presence_penalty = *c.presence_penalty;
  if (c.thinking_gate) config.thinking_gate = *c.thinking_gate;
}

p::SnapshotStatus snapshot_status(const SnapshotReport& report) {
  return p::SnapshotStatus{static_cast<p::SnapshotStatusCode>(report.outcome), report.active_slots,
                           static_cast<uint64_t>(report.clock), report.stream_id};
}

// Runs one decoded request. Returns false for OP_SHUTDOWN.
bool dispatch(Session& session, const p::InboundMessage& message, const ServerOptions& options, FrameEvents& events) {
  return std::visit(
      [&](const auto& m) -> bool {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, p::StreamInput>) {
          if (m.mode == p::MODE_TEXT) {
            session.input_text(m.text, m.flags, events);
          } else {
            const std::vector<int32_t> tokens(m.tokens.begin(), m.tokens.end());
            session.input_tokens(tokens, m.flags, events);
          }
        } else if constexpr (std::is_same_v<T, p::SetConfig>) {
          apply_config(m, session.config());
        } else if constexpr (std::is_same_v<T, p::ToolReturn>) {
          session.tool_return(m.name, m.result, events);
        } else if constexpr (std::is_same_v<T, p::SetSystem>) {
          session.set_system(m.text, events);
        } else if constexpr (std::is_same_v<T, p::Resume>) {
          session.resume(m.action == p::RESUME_ACTION_CLOSE_THOUGHT, events);
        } else if constexpr (std::is_same_v<T, p::ProbeAutonomic>) {
          const ProbeResult r = session.probe(m.prompt, m.candidates, m.max_decode_tokens, events);
          events.send(p::AutonomicResult{r.index, r.confidence, r.entropy, r.cost_ms, r.text});
        } else if constexpr (std::is_same_v<T, p::MemQuery>) {
          const MemoryRecall recall = session.recall_memory(m.query, m.top_k);
          p::MemResponse response{recall.created_ms.empty() ? p::MEM_STATUS_NO_MATCH : p::MEM_STATUS_OK, 0,
                                  recall.injected_tokens, {}};
          for (int64_t ms : recall.created_ms) response.timestamps.push_back(epoch_milliseconds_of(ms));
          events.send(response);
        } else if constexpr (std::is_same_v<T, p::SnapshotSave>) {
          events.send(snapshot_status(session.save_snapshot(options.snapshot_paths.for_save(m.path), m.stream_id)));
        } else if constexpr (std::is_same_v<T, p::SnapshotLoad>) {
          events.send(snapshot_status(session.load_snapshot(options.snapshot_paths.for_load(m.path))));
          events.status(session.status_report(EngineStatus::Idle));
        } else if constexpr (std::is_same_v<T, p::MemCommit>) {
          session.commit_memory();  // no reply, as the original
        } else if constexpr (std::is_same_v<T, p::Ping>) {
          events.send(p::Pong{});
        } else if constexpr (std::is_same_v<T, p::Shutdown>) {
          return false;
        }
        // OP_ABORT is handled by the reader.
        return true;
      },
      message);
}

// Serves requests until the input ends. A request that throws is answered with OP_ERROR and
// serving goes on: channel::Error is bad input (the session is as it was), any other
// std::exception a failure of the request (out of memory, a thread that could not start) that
// leaves the session usable. An exception of no known type says nothing of the state it left:
// it is answered, and serving stops with exit code 1.
int serve_requests(Session& session, const ServerOptions& options, FrameWriter& writer, InboundQueue& queue) {
  while (std::optional<InboundItem> item = queue.pop()) {
    if (auto* error = std::get_if<p::FrameError>(&item->content)) {
      FrameEvents(writer, error->msg_id, options).send(p::ErrorMessage{error->reason});
      continue;
    }
    const p::Frame& frame = std::get<p::Frame>(item->content);
    FrameEvents events(writer, frame.header.msg_id, options);
    const auto decoded = p::decode_inbound(frame.header.opcode, frame.payload,
                                           static_cast<uint32_t>(session.tokenizer().n_vocab()));
    if (!decoded.ok()) {
      events.send(p::ErrorMessage{decoded.error().reason});
      continue;
    }
    bool running = true;
    try {
      running = dispatch(session, decoded.value(), options, events);
    } catch (const Error& e) {
      events.send(p::ErrorMessage{e.what()});
    } catch (const std::exception& e) {
      events.send(p::ErrorMessage{fmt::format("the request failed: {}", e.what())});
    } catch (...) {
      events.send(p::ErrorMessage{"the request failed with an exception of unknown type; the engine stops"});
      fmt::print(stderr, "channel: request {} failed with an exception of unknown type; stopping\n",
                 frame.header.msg_id);
      return 1;
    }
    if (!running || writer.failed()) return 0;  // OP_SHUTDOWN, or nobody is listening any more
  }
  if (const auto failure = queue.failure()) {
    fmt::print(stderr, "channel: reading the input failed: {}; stopping\n", *failure);
    return 1;
  }
  return 0;
}

}  // namespace

int serve(Session& session, const ServerOptions& options) {
  // A host that closes its end of the output must make the write fail (EPIPE: FrameWriter::failed,
  // then exit 0 after the request), not kill the engine with SIGPIPE mid-request.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    InboundQueue queue;
    // Nobody listening any more: the running request stops at its next check, the input is left.
    FrameWriter writer(options.output_fd, FrameWriter::kDefaultCapacity, [&session, &queue] {
      session.abort_flag() = true;
      queue.close(/*drop_pending=*/true);
    });
    // Ready: one unsolicited idle status with msg_id 0.
    FrameEvents(writer, 0, options).send(p::Status{p::STATUS_IDLE, options.is_gpu, 0, 0, 0, 0.0f, 0, 0});
    InputReader reader(options.input_fd, session.abort_flag(), queue, writer);
    return serve_requests(session, options, writer, queue);
  } catch (const std::exception& e) {
    // Outside a request (a thread that would not start, no memory for a reply): nothing to
    // answer, and no way to go on.
    fmt::print(stderr, "channel: serving failed: {}\n", e.what());
    return 1;
  }
}

}  // namespace channel::server
