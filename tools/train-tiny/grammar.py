"""The text Channel's engine writes around what clients send (src/engine/turn_grammar.cpp),
mirrored so that the corpus is in exactly the stream the engine builds; test_grammar.py checks
the two agree through a driver linked against the engine.

Markers are Gemma 4's special tokens, found by name in the vocabulary (vocab.SPECIAL_TOKENS)."""

import json

QUOTE = '<|"|>'  # Gemma 4's string delimiter token


def gemma_string(s):
    return QUOTE + s + QUOTE


def user_input(text, reason):
    """OP_STREAM_INPUT's rendering; without INPUT_FLAG_REASON the empty thought block follows."""
    return f"<|turn>user\n{text}\n<turn|>\n<|turn>model\n" + ("" if reason else "<|channel>thought\n<channel|>")


def chat_turn(text):
    """The official single-turn template (`channel run` and probes between turns): no newline
    before <turn|>, thinking off."""
    return f"<|turn>user\n{text}<turn|>\n<|turn>model\n<|channel>thought\n<channel|>"


def _sorted_items(obj):
    # nlohmann's object is a std::map: keys in byte order.
    return sorted(obj.items(), key=lambda kv: kv[0].encode("utf-8"))


def _parameters(parameters):
    out = ",parameters:{"
    properties = parameters.get("properties")
    if properties is not None:
        rendered = []
        for key, prop in _sorted_items(properties):
            item = key + ":{"
            if "description" in prop:
                item += "description:" + gemma_string(prop["description"]) + ","
            kind = prop.get("type", "string")[:32].upper()
            if kind == "ARRAY":
                item += "items:{type:" + gemma_string("STRING") + "},"
            rendered.append(item + "type:" + gemma_string(kind) + "}")
        out += "properties:{" + ",".join(rendered) + "},"
    required = parameters.get("required")
    if required:
        out += "required:[" + ",".join(gemma_string(r) for r in required) + "],"
    return out + "type:" + gemma_string("OBJECT") + "}"


def tool_declaration(tool):
    out = "<|tool>declaration:" + tool.get("name", "") + "{description:" + gemma_string(tool.get("description", ""))
    if "parameters" in tool:
        out += _parameters(tool["parameters"])
    return out + "}<tool|>"


def system_turn(instructions=None, tools=()):
    """OP_SET_SYSTEM with a JSON payload {instructions, tools}."""
    body = (instructions + "\n" if instructions is not None else "") + "".join(tool_declaration(t) for t in tools)
    return "<|turn>system\n<|think|>\n" + body + "<turn|>\n"


def system_payload(instructions=None, tools=()):
    """The OP_SET_SYSTEM payload that system_turn renders (for the engine comparison)."""
    payload = {}
    if instructions is not None:
        payload["instructions"] = instructions
    if tools:
        payload["tools"] = list(tools)
    return json.dumps(payload)


def value(v):
    """A JSON value in Gemma's notation: bare keys in byte order, strings between <|"|>."""
    if isinstance(v, dict):
        return "{" + ",".join(k + ":" + value(x) for k, x in _sorted_items(v)) + "}"
    if isinstance(v, list):
        return "[" + ",".join(value(x) for x in v) + "]"
    if isinstance(v, str):
        return gemma_string(v)
    return json.dumps(v)  # null, booleans, numbers (integers only in this corpus: same text as nlohmann)


def tool_call(name, arguments):
    """What the model writes to call a tool (parsed by src/engine/tool_call.cpp)."""
    return f"<|tool_call>call:{name}{value(arguments)}<tool_call|>"


def tool_response(name, result):
    """OP_TOOL_RETURN with a JSON object result; the stream is left inside a thought."""
    out = f"<|tool_response>response:{name}{value(result)}<tool_response|><|channel>thought\n"
    if "error" in result:
        out += "Notice: Tool execution failed. Analyze error and correct tool call:\n"
    return out
