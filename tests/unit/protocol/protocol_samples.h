// Valid messages of every opcode, in each variant of its layout (text and token input, both
// MEM_QUERY layouts, every SET_CONFIG step, ...): the round-trip tests encode and decode them,
// and make_protocol_corpus writes them as fuzzing seeds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/inbound.h"
#include "protocol/outbound.h"

namespace channel::test {

// Large enough for every token id below; Gemma 4's vocabulary has 262144 entries.
inline constexpr uint32_t kSampleVocabSize = 262144;

inline std::vector<protocol::InboundMessage> inbound_samples() {
  using namespace protocol;
  const SetConfig core{.thinking_budget = 512, .temperature = 0.7f, .top_p = 0.95f,
                       .quiescence_threshold = 0.001f, .max_tokens = 64};
  SetConfig sampling = core;
  sampling.min_p = 0.05f;
  sampling.repeat_penalty = 1.1f;
  SetConfig window = sampling;
  window.repeat_last_n = 64;
  SetConfig penalties = window;
  penalties.frequency_penalty = 0.1f;
  penalties.presence_penalty = 0.1f;
  SetConfig full = penalties;
  full.thinking_gate = true;
  return {
      StreamInput{.mode = MODE_TEXT, .flags = INPUT_FLAG_NONE, .text = "Hello, world."},
      StreamInput{.mode = MODE_TEXT, .flags = INPUT_FLAG_REASON | INPUT_FLAG_RAW, .text = "<|turn>user\nhi"},
      StreamInput{.mode = MODE_TOKENS, .flags = INPUT_FLAG_NONE, .tokens = {2, 105, 2364, 106, 262143}},
      StreamInput{.mode = MODE_TOKENS, .flags = INPUT_FLAG_DIRECT, .tokens = {}},
      Abort{},
      MemQuery{.layout = MemQueryLayout::Engine, .top_k = 5, .query = "the sea"},
      MemQuery{.layout = MemQueryLayout::Client, .mode = QUERY_TEMPORAL, .top_k = 8, .query = "yesterday"},
      core,
      sampling,
      window,
      penalties,
      full,
      ToolReturn{.call_id = 1, .status = 0, .name = "get_weather", .result = R"({"temp": 21})"},
      MemCommit{},
      SetSystem{.text = R"({"instructions": "Be brief.", "tools": []})"},
      SetSystem{},
      SnapshotSave{.path = ".memory/.snapshot.bin", .stream_id = "01HZX3Q9V7K2M4N6P8R0S2T4V6"},
      SnapshotSave{.path = "s.bin", .stream_id = ""},
      SnapshotLoad{.path = ".memory/.snapshot.bin"},
      Resume{.action = RESUME_ACTION_CONTINUE},
      Resume{.action = RESUME_ACTION_CLOSE_THOUGHT},
      Ping{},
      Shutdown{},
      ProbeAutonomic{.max_decode_tokens = 1, .min_certainty = 0.6f, .prompt = "Is it raining?",
                     .candidates = {"yes", "no"}},
      ProbeAutonomic{.max_decode_tokens = 16, .min_certainty = 0.0f, .prompt = "Name a colour:", .candidates = {}},
  };
}

inline std::vector<protocol::OutboundMessage> outbound_samples() {
  using namespace protocol;
  return {
      StreamToken{.kind = StreamKind::Content, .token_id = 9259, .clock = 41, .text = "\xE2\x96\x81Hello"},
      StreamToken{.kind = StreamKind::Thought, .token_id = 236761, .clock = (uint64_t{1} << 33) + 7, .text = "."},
      TurnComplete{.tokens = 12, .elapsed_ms = 480, .tokens_per_second = 22.9f, .reason = STOP_ELASTIC_YIELD},
      ToolCall{.call_id = 1, .name = "get_weather", .arguments = "{city:<|\"|>Paris<|\"|>}"},
      MemResponse{.status = MEM_STATUS_OK, .timestamps = {1717000000000, 1717000123456}},
      MemResponse{.status = MEM_STATUS_NO_MATCH, .timestamps = {}},
      Status{.status = STATUS_GENERATING, .is_gpu = true, .active_slots = 812, .archived_diffs = 3,
             .flags = STATUS_FLAG_SATURATED, .tokens_per_second = 31.5f, .current = 16, .total = 640},
      Status{},
      SnapshotStatus{.status = SNAPSHOT_STATUS_LOADED, .active_slots = 700, .clock = 123456, .stream_id = "01HZX3Q9V7"},
      AutonomicResult{.index = 1, .confidence = 0.875f, .entropy = 0.37f, .cost_ms = 14.0f, .text = ""},
      AutonomicResult{.index = 0, .confidence = 0, .entropy = 0, .cost_ms = 52.0f, .text = "Blue"},
      Pong{},
      ErrorMessage{.message = "Failed to load snapshot"},
  };
}

}  // namespace channel::test
