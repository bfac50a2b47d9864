// Snapshots restore the whole session: after SNAPSHOT_LOAD the next greedy turn is the one that
// followed the save. A bad file is refused with OP_ERROR "cannot load snapshot ..." and the
// session goes on unchanged. (The replies' codes, SAVED / EXISTS / LOADED, are in
// opcodes.test.mjs.) Relative paths are relative to the engine's working directory, the suite's
// scratch folder.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, test } from 'node:test';

import { SNAPSHOT_STATUS_LOADED, SNAPSHOT_STATUS_SAVED } from '../../../clients/node/src/protocol.js';
import { GREEDY, SUITE, engineSuite, expectError, pingThrough, replyTo, tokenFrames, turnOf } from './support.mjs';

/** Token frames (ids and clocks) of a greedy turn. */
async function turnFrames(client, text) {
  const frames = tokenFrames(await turnOf(client, client.sendInput(text)));
  assert.ok(frames.length > 0);
  return frames;
}

async function snapshotStatus(client, msgId) {
  const { event, data } = await replyTo(client, msgId, ['snapshotStatus', 'error']);
  assert.equal(event, 'snapshotStatus', JSON.stringify(data));
  return data;
}

// A snapshot holds the stream, not the episode store: with memory on, the turn after the load
// would recall from a store that has grown since the save, and differ.
const NO_MEMORY = ['--no-memory'];

describe('snapshots', SUITE, () => {
  const suite = engineSuite('plain');

  test('round trip: save, go on, load: the same next turn, with the settings saved', async () => {
    const client = await suite.start({ config: GREEDY, extraArgs: NO_MEMORY });
    await turnFrames(client, 'Hello there');
    const saved = await snapshotStatus(client, client.sendSnapshotSave('round.snap', 'entry-1'));
    assert.equal(saved.status, SNAPSHOT_STATUS_SAVED);
    const next = await turnFrames(client, 'What comes next?');

    client.setConfig({ maxTokens: 3 }); // the snapshot holds the settings in force when it was saved
    const loaded = await snapshotStatus(client, client.sendSnapshotLoad('round.snap'));
    assert.deepEqual([loaded.status, loaded.clock, loaded.streamId], [SNAPSHOT_STATUS_LOADED, saved.clock, 'entry-1']);
    assert.deepEqual(await turnFrames(client, 'What comes next?'), next);
    assert.deepEqual(client.errors, []);
  });

  test('a corrupt, truncated, empty or missing file is refused and the session is intact', async () => {
    const client = await suite.start({ config: GREEDY, extraArgs: NO_MEMORY });
    await turnFrames(client, 'Hello there');
    assert.equal((await snapshotStatus(client, client.sendSnapshotSave('good.snap'))).status, SNAPSHOT_STATUS_SAVED);
    const good = fs.readFileSync('good.snap');
    const flipped = (at) => {
      const bytes = Buffer.from(good);
      bytes[at] ^= 0xff;
      return bytes;
    };
    const bad = {
      'flipped-middle.snap': flipped(good.length >> 1),
      'flipped-header.snap': flipped(8),
      'flipped-last.snap': flipped(good.length - 1),
      'truncated.snap': good.subarray(0, Math.floor(good.length / 3)),
      'short-by-one.snap': good.subarray(0, good.length - 1),
      'empty.snap': Buffer.alloc(0),
    };
    for (const [name, bytes] of Object.entries(bad)) fs.writeFileSync(name, bytes);

    const next = await turnFrames(client, 'What comes next?');
    assert.equal((await snapshotStatus(client, client.sendSnapshotLoad('good.snap'))).status, SNAPSHOT_STATUS_LOADED);
    for (const name of [...Object.keys(bad), 'missing.snap']) {
      const { error } = await expectError(client, client.sendSnapshotLoad(name), ['snapshotStatus']);
      assert.match(error, /cannot load snapshot/, name);
      assert.ok(error.includes(name) && !error.includes('\n'), error);
      await pingThrough(client);
    }
    assert.deepEqual(await turnFrames(client, 'What comes next?'), next);
  });
});
