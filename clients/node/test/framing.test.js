// Frame codec tests. Expected bytes are written out by hand from the layout tables in
// reference/original-channel.md §1.2-§1.6, not produced by the code under test.
// The same frames are checked by clients/python/tests/test_framing.py.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import * as framing from '../src/framing.js';
import { DEFAULT_CONFIG, FrameReader, ProtocolError, decodeMessage } from '../src/framing.js';
import { INPUT_FLAG_RAW, INPUT_FLAG_REASON, RESUME_ACTION_CLOSE_THOUGHT, STOP_ELASTIC_YIELD } from '../src/protocol.js';

/** Bytes from hex written in groups; '|' separates fields for readability. */
const h = (text) => Buffer.from(text.replace(/[\s|]/g, ''), 'hex');
const cat = (...parts) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));

/** Hand-assembled header: magic 58 4C 55 53, version 01 00, then LE fields. */
function header(msgId, opcode, length) {
  return cat(h('58 4C 55 53 | 01 00'), Buffer.from([msgId, 0, opcode & 0xff, opcode >> 8, 0, 0, length, 0, 0, 0]));
}

describe('encode inbound', () => {
  test('header layout', () => {
    assert.deepEqual(
      framing.encodeFrame(0x0001, 7, Buffer.from('x')),
      h('58 4C 55 53 | 01 00 | 07 00 | 01 00 | 00 00 | 01 00 00 00 | 78'),
    );
  });

  test('stream input text with reason', () => {
    // mode 0, flags 0x02, token_count 0, 4 unused bytes, text at offset 8
    assert.deepEqual(
      framing.streamInputFrame(7, 'hi', INPUT_FLAG_REASON),
      cat(header(7, 0x0001, 10), h('00 | 02 | 00 00 | 00 00 00 00 | 68 69')),
    );
  });

  test('stream input raw flag', () => {
    assert.deepEqual(
      framing.streamInputFrame(1, '', INPUT_FLAG_RAW),
      cat(header(1, 0x0001, 8), h('00 | 80 | 00 00 | 00 00 00 00')),
    );
  });

  test('stream input tokens', () => {
    // mode 1, token_count 2, then u32 ids 2 and 651 (0x28B)
    assert.deepEqual(
      framing.streamInputFrame(2, '', 0, [2, 651]),
      cat(header(2, 0x0001, 16), h('01 | 00 | 02 00 | 00 00 00 00 | 02 00 00 00 | 8B 02 00 00')),
    );
  });

  test('stream input rejects text and tokens', () => {
    assert.throws(() => framing.streamInputFrame(1, 'hi', 0, [2]), TypeError);
  });

  test('abort has no payload', () => {
    assert.deepEqual(framing.abortFrame(3), header(3, 0x0002, 0));
  });

  test('mem query in the engine layout', () => {
    // top_k u16, 2 ignored bytes, query text at offset 4
    assert.deepEqual(framing.memQueryFrame(4, 'sea', 5), cat(header(4, 0x0003, 7), h('05 00 | 00 00 | 73 65 61')));
  });

  test('config defaults are the original client defaults', () => {
    const expected = h(
      '00 02 00 00' + // thinking_budget 512
        '| 00 00 80 3F' + // temp 1.0
        '| 33 33 73 3F' + // top_p 0.95
        '| 6F 12 83 3A' + // quiescence threshold 0.001
        '| 40 00 00 00' + // max_tokens 64
        '| CD CC 4C 3D' + // min_p 0.05
        '| CD CC 8C 3F' + // repeat_penalty 1.1
        '| 40 00 00 00' + // repeat_last_n 64
        '| CD CC CC 3D' + // frequency_penalty 0.1
        '| CD CC CC 3D' + // presence_penalty 0.1
        '| 00', // thinking_gate
    );
    assert.equal(expected.length, 41);
    assert.deepEqual(framing.configFrame(5, DEFAULT_CONFIG), cat(header(5, 0x0004, 41), expected));
  });

  test('config fields in code order', () => {
    const config = { ...DEFAULT_CONFIG, thinkingBudget: 1, temp: 0.5, maxTokens: 256, repeatLastN: 3, thinkingGate: true };
    const payload = framing.configFrame(5, config).subarray(16);
    assert.deepEqual(payload.subarray(0, 4), h('01 00 00 00'));
    assert.deepEqual(payload.subarray(4, 8), h('00 00 00 3F'));
    assert.deepEqual(payload.subarray(16, 20), h('00 01 00 00'));
    assert.deepEqual(payload.subarray(28, 32), h('03 00 00 00'));
    assert.deepEqual(payload.subarray(40, 41), h('01'));
  });

  test('tool return', () => {
    // call_id 1, status 0, name_len 6, "search", result to the end
    assert.deepEqual(
      framing.toolReturnFrame(6, 'search', '{"a":1}'),
      cat(header(6, 0x0005, 19), h('01 00 | 00 00 | 06 00'), 'search', '{"a":1}'),
    );
  });

  test('mem commit, ping and shutdown are header only', () => {
    assert.deepEqual(framing.memCommitFrame(8), header(8, 0x0006, 0));
    assert.deepEqual(framing.pingFrame(9), header(9, 0x000e, 0));
    assert.deepEqual(framing.shutdownFrame(10), header(10, 0x000f, 0));
  });

  test('set system', () => {
    assert.deepEqual(framing.setSystemFrame(11, 'sys'), cat(header(11, 0x0007, 3), 'sys'));
  });

  test('snapshot save', () => {
    // path_len 5, path, stream_id_len 3, stream id
    assert.deepEqual(
      framing.snapshotSaveFrame(12, 's.bin', 'id1'),
      cat(header(12, 0x0008, 12), h('05 00'), 's.bin', h('03 00'), 'id1'),
    );
  });

  test('snapshot load is the whole payload path', () => {
    assert.deepEqual(framing.snapshotLoadFrame(13, 's.bin'), cat(header(13, 0x0009, 5), 's.bin'));
  });

  test('resume', () => {
    assert.deepEqual(framing.resumeFrame(14), header(14, 0x000a, 0));
    assert.deepEqual(framing.resumeFrame(15, RESUME_ACTION_CLOSE_THOUGHT), cat(header(15, 0x000a, 1), h('01')));
  });

  test('probe autonomic', () => {
    // max_decode 1, 2 candidates, min_certainty 0.6 (0x3F19999A), prompt_len 2 "Q?",
    // then each candidate u16-prefixed
    assert.deepEqual(
      framing.probeAutonomicFrame(16, 'Q?', ['0', '1']),
      cat(header(16, 0x0012, 18), h('01 00 | 02 00 | 9A 99 19 3F | 02 00 51 3F | 01 00 30 | 01 00 31')),
    );
  });

  test('UTF-8 lengths are byte counts', () => {
    assert.deepEqual(framing.toolReturnFrame(1, 'é', '').subarray(20, 22), h('02 00'));
  });

  test('u16 fields are range checked', () => {
    assert.throws(() => framing.toolReturnFrame(1, 'x'.repeat(0x10000), ''), RangeError);
    assert.throws(() => framing.pingFrame(0x10000), RangeError);
    assert.throws(() => framing.memQueryFrame(1, 'q', -1), RangeError);
  });
});

// Outbound frames, hand-assembled.
const CONTENT = cat(
  header(9, 0x0101, 32),
  h(
    '32 03 00 00' + // token_id 818
      '| 05 00 00 00 00 00 00 00' + // clock 5
      '| FF FF FF FF FF FF 00 00' + // layer mask
      '| 00 | 00 | 08 00' + // type TEXT, reserved, text_len 8
      '| E2 96 81 77 6F 72 6C 64', // "\u2581world"
  ),
);
const THOUGHT = cat(
  header(9, 0x0102, 25),
  h('01 00 00 00 | 06 00 00 00 00 00 00 00 | 00 00 00 00 00 00 00 00 | 00 00 01 00 | 61'),
);
const TURN_COMPLETE = cat(header(9, 0x0103, 16), h('10 00 00 00 | 7D 00 00 00 | 00 00 70 41 | 04 | 00 00 00'));
const TOOL_CALL = cat(header(9, 0x0104, 15), h('01 00 | 06 00'), 'search', '{q:1}');
const STATUS = cat(
  header(0, 0x0106, 20),
  h('02 | 01 | 00 01 | 03 00 | 01 00 | 00 00 C8 41 | 08 00 00 00 | 40 02 00 00'),
);
const MEM_RESPONSE = cat(
  header(17, 0x0105, 24),
  h('02 | 00 | 00 00 | 00 00 00 00 | E8 03 00 00 00 00 00 00 | 08 07 06 05 04 03 02 00'),
);
const SNAPSHOT_STATUS = cat(header(18, 0x0107, 17), h('00 | 00 | 07 00 | 2A 00 00 00 00 00 00 00 | 03 00'), 'id1');
const AUTONOMIC_RESULT = cat(
  header(19, 0x010c, 18),
  h('01 00 | 00 00 40 3F | 00 00 00 3F | 00 00 C0 3F | 02 00'),
  'ok',
);
const PONG = header(20, 0x010e, 0);
const ERROR = cat(header(21, 0x01ff, 23), 'Failed to load snapshot');
const ALL_FRAMES = [
  CONTENT,
  THOUGHT,
  TURN_COMPLETE,
  TOOL_CALL,
  STATUS,
  MEM_RESPONSE,
  SNAPSHOT_STATUS,
  AUTONOMIC_RESULT,
  PONG,
  ERROR,
];
const PONG_FRAME = { msgId: 20, opcode: 0x010e, payload: Buffer.alloc(0) };

function decode(raw) {
  const frames = new FrameReader().push(raw);
  assert.equal(frames.length, 1);
  return decodeMessage(frames[0]);
}

const payloadOf = (raw) => raw.subarray(16);

describe('decode outbound', () => {
  test('content', () => {
    assert.deepEqual(decode(CONTENT), {
      event: 'content',
      data: {
        msgId: 9,
        tokenId: 818,
        clock: 5,
        layerMask: 0x0000ffffffffffffn,
        tokenType: 0,
        piece: '\u2581world',
        text: ' world',
      },
    });
  });

  test('thought', () => {
    const { event, data } = decode(THOUGHT);
    assert.equal(event, 'thought');
    assert.deepEqual([data.tokenId, data.clock, data.text], [1, 6, 'a']);
  });

  test('turn complete', () => {
    assert.deepEqual(decode(TURN_COMPLETE), {
      event: 'turnComplete',
      data: { msgId: 9, totalTok: 16, elapsedMs: 125, tokSec: 15, reason: STOP_ELASTIC_YIELD },
    });
  });

  test('tool call', () => {
    assert.deepEqual(decode(TOOL_CALL), {
      event: 'toolCall',
      data: { msgId: 9, callId: 1, toolName: 'search', argsJson: '{q:1}' },
    });
  });

  test('status', () => {
    assert.deepEqual(decode(STATUS), {
      event: 'status',
      data: {
        msgId: 0,
        status: 2,
        isGpu: true,
        activeSlots: 256,
        archivedDiffs: 3,
        flags: 1,
        isSaturated: true,
        tokSec: 25,
        currentTok: 8,
        totalTok: 576,
      },
    });
  });

  test('mem response', () => {
    assert.deepEqual(decode(MEM_RESPONSE), {
      event: 'memResponse',
      data: { msgId: 17, count: 2, status: 0, cursor: 0, totalTokens: 0, timestamps: [1000, 0x02030405060708] },
    });
  });

  test('mem response count and status are separate bytes', () => {
    // The original client read a u16 count here and would see 257.
    const payload = h('01 | 01 | 00 00 | 00 00 00 00 | 01 00 00 00 00 00 00 00');
    const { data } = decodeMessage({ msgId: 1, opcode: 0x0105, payload });
    assert.deepEqual([data.count, data.status, data.timestamps], [1, 1, [1]]);
  });

  test('snapshot status', () => {
    assert.deepEqual(decode(SNAPSHOT_STATUS), {
      event: 'snapshotStatus',
      data: { msgId: 18, status: 0, activeSlots: 7, clock: 42, streamId: 'id1' },
    });
  });

  test('autonomic result with unaligned floats', () => {
    assert.deepEqual(decode(AUTONOMIC_RESULT), {
      event: 'autonomicResult',
      data: { msgId: 19, winningIdx: 1, confidence: 0.75, entropy: 0.5, costMs: 1.5, text: 'ok' },
    });
  });

  test('pong and error', () => {
    assert.deepEqual(decode(PONG), { event: 'pong', data: { msgId: 20 } });
    assert.deepEqual(decode(ERROR), {
      event: 'error',
      data: { msgId: 21, error: 'Failed to load snapshot', local: false },
    });
  });

  test('unknown opcode is passed through', () => {
    const frame = { msgId: 3, opcode: 0x0199, payload: h('01') };
    assert.deepEqual(decodeMessage(frame), { event: 'unknown', data: frame });
  });

  test('trailing bytes are ignored', () => {
    const frame = new FrameReader().push(STATUS)[0];
    const extended = { ...frame, payload: cat(frame.payload, h('AA BB')) };
    assert.deepEqual(decodeMessage(extended), decodeMessage(frame));
  });

  test('invalid UTF-8 is replaced', () => {
    const payload = cat(Buffer.alloc(22), h('01 00 FF'));
    assert.equal(decodeMessage({ msgId: 1, opcode: 0x0101, payload }).data.piece, '\uFFFD');
  });
});

describe('malformed payloads', () => {
  const assertMalformed = (opcode, payload) =>
    assert.throws(() => decodeMessage({ msgId: 1, opcode, payload }), ProtocolError);

  test('short fixed layouts', () => {
    // Each frame's fixed part cut by one byte.
    for (const [opcode, raw, fixed] of [
      [0x0101, CONTENT, 24],
      [0x0102, THOUGHT, 24],
      [0x0103, TURN_COMPLETE, 16],
      [0x0104, TOOL_CALL, 4],
      [0x0105, MEM_RESPONSE, 8],
      [0x0106, STATUS, 20],
      [0x0107, SNAPSHOT_STATUS, 14],
      [0x010c, AUTONOMIC_RESULT, 16],
    ]) {
      assertMalformed(opcode, payloadOf(raw).subarray(0, fixed - 1));
    }
  });

  test('lengths beyond the payload', () => {
    assertMalformed(0x0101, payloadOf(CONTENT).subarray(0, -1)); // text_len 8, 7 bytes of text
    assertMalformed(0x0104, cat(h('01 00 | 09 00'), 'search')); // name_len 9, 6 bytes
    assertMalformed(0x0105, cat(h('02 00 00 00 00 00 00 00'), Buffer.alloc(8))); // count 2, one timestamp
    assertMalformed(0x0107, payloadOf(SNAPSHOT_STATUS).subarray(0, -1));
    assertMalformed(0x010c, payloadOf(AUTONOMIC_RESULT).subarray(0, -1));
  });
});

describe('FrameReader', () => {
  const byteByByte = (reader, stream) => {
    const frames = [];
    for (let i = 0; i < stream.length; i++) frames.push(...reader.push(stream.subarray(i, i + 1)));
    return frames;
  };

  test('merged frames', () => {
    const reader = new FrameReader();
    const frames = reader.push(Buffer.concat(ALL_FRAMES));
    assert.deepEqual(
      frames.map((f) => f.opcode),
      [0x101, 0x102, 0x103, 0x104, 0x106, 0x105, 0x107, 0x10c, 0x10e, 0x1ff],
    );
    assert.deepEqual([reader.pending, reader.skipped], [0, 0]);
  });

  test('one byte at a time matches whole', () => {
    const stream = Buffer.concat(ALL_FRAMES);
    const reader = new FrameReader();
    assert.deepEqual(byteByByte(reader, stream), new FrameReader().push(stream));
    assert.deepEqual([reader.pending, reader.skipped], [0, 0]);
  });

  test('partial frame is held back', () => {
    const reader = new FrameReader();
    assert.deepEqual(reader.push(CONTENT.subarray(0, 20)), []);
    assert.equal(reader.pending, 20);
    assert.equal(reader.push(CONTENT.subarray(20)).length, 1);
  });

  test('resync after leading garbage', () => {
    const reader = new FrameReader();
    assert.deepEqual(reader.push(cat('hello\n', PONG)), [PONG_FRAME]);
    assert.equal(reader.skipped, 6);
  });

  test('resync between frames and on a partial magic', () => {
    // "XLU" is the start of the magic without the rest; it must not swallow the next frame.
    const reader = new FrameReader();
    const frames = byteByByte(reader, cat(PONG, 'XLU', 'garbage', ERROR));
    assert.deepEqual(
      frames.map((f) => f.opcode),
      [0x010e, 0x01ff],
    );
    assert.equal(reader.skipped, 10);
  });

  test('garbage is dropped at once', () => {
    const reader = new FrameReader();
    assert.deepEqual(reader.push(Buffer.alloc(1000, 'x')), []);
    assert.deepEqual([reader.skipped, reader.pending], [1000, 0]);
  });

  test('a tail that may start a header is kept', () => {
    const reader = new FrameReader();
    assert.deepEqual(reader.push(cat('abc', PONG.subarray(0, 5))), []);
    assert.deepEqual([reader.skipped, reader.pending], [3, 5]);
    assert.deepEqual(reader.push(PONG.subarray(5)), [PONG_FRAME]);
  });

  test('wrong version is skipped', () => {
    const reader = new FrameReader();
    assert.deepEqual(reader.push(cat(h('58 4C 55 53 | 02 00 | 01 00 | 0E 01 | 00 00 | 00 00 00 00'), PONG)), [PONG_FRAME]);
    assert.equal(reader.skipped, 16);
  });

  test('wrong magic is skipped', () => {
    const reader = new FrameReader();
    assert.deepEqual(reader.push(cat(h('58 4C 55 54 | 01 00 | 01 00 | 0E 01 | 00 00 | 00 00 00 00'), PONG)), [PONG_FRAME]);
    assert.equal(reader.skipped, 16);
  });

  test('oversized length is treated as garbage', () => {
    const reader = new FrameReader({ maxPayload: 1024 });
    assert.deepEqual(reader.push(cat(h('58 4C 55 53 | 01 00 | 01 00 | 0E 01 | 00 00 | FF FF FF 7F'), PONG)), [PONG_FRAME]);
    assert.equal(reader.skipped, 16);
  });

  test('reserved field is ignored', () => {
    const frame = Buffer.from(PONG);
    frame.writeUInt16LE(0xcdab, 10);
    assert.deepEqual(new FrameReader().push(frame), [PONG_FRAME]);
  });
});

describe('round trip', () => {
  test('every inbound frame survives the reader', () => {
    const frames = [
      framing.streamInputFrame(1, 'héllo'),
      framing.abortFrame(2),
      framing.memQueryFrame(3, 'q'),
      framing.configFrame(4, DEFAULT_CONFIG),
      framing.toolReturnFrame(5, 't', 'r'),
      framing.memCommitFrame(6),
      framing.setSystemFrame(7, '{}'),
      framing.snapshotSaveFrame(8, 'p', 's'),
      framing.snapshotLoadFrame(9, 'p'),
      framing.resumeFrame(10),
      framing.pingFrame(11),
      framing.shutdownFrame(12),
      framing.probeAutonomicFrame(13, 'p', ['a']),
    ];
    const decoded = new FrameReader().push(Buffer.concat(frames));
    assert.deepEqual(
      decoded.map((f) => f.msgId),
      Array.from({ length: 13 }, (_, i) => i + 1),
    );
    assert.deepEqual(
      decoded.map((f) => 16 + f.payload.length),
      frames.map((f) => f.length),
    );
  });
});
