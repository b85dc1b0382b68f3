/**
 * Property tests for the MortarMQ v0 codec: round trips for every op, the
 * streaming decoder's independence from chunking, and robustness against
 * arbitrary bytes (only typed MortarErrors, never anything else).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  FrameDecoder, MortarError, decodeFrame, decodeFrameBytes, encodeFrame, encodeFrameInto, encodeFrames, frameSize,
  type Frame,
} from "../../wire/mortar";
import { anyFrame, frameArbs } from "./mortar-arbitraries";

/** Decodes `stream` cut at `cuts` (sorted offsets), returning all frames and the final error. */
function decodeChunked(stream: Uint8Array, cuts: number[]) {
  const d = new FrameDecoder();
  const frames: Frame[] = [];
  const bodies: Uint8Array[] = [];
  let error: MortarError | null = null;
  let at = 0;
  for (const c of [...cuts, stream.length]) {
    const out = d.push(stream.subarray(at, c));
    frames.push(...out.frames);
    bodies.push(...out.bodies);
    error = out.error;
    at = c;
  }
  return { frames, bodies, error, partial: d.hasPartialFrame };
}

const cutsOf = (len: number) =>
  fc.array(fc.integer({ min: 0, max: len }), { maxLength: 12 }).map((cs) => [...cs].sort((a, b) => a - b));

describe("encode → decode round trip", () => {
  for (const [name, arb] of Object.entries(frameArbs)) {
    it(`${name} with random fields`, () => {
      fc.assert(
        fc.property(arb, (f) => {
          const bytes = encodeFrame(f);
          expect(bytes.length).toBe(frameSize(f));
          expect(decodeFrameBytes(bytes)).toEqual(f);
        }),
        { numRuns: 200 },
      );
    });
  }

  it("encodeFrames / encodeFrameInto produce the concatenation of encodeFrame", () => {
    fc.assert(
      fc.property(fc.array(anyFrame, { maxLength: 8 }), fc.nat({ max: 16 }), (frames, pad) => {
        const joined = encodeFrames(frames);
        const parts = frames.map(encodeFrame);
        const expected = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
        let at = 0;
        for (const p of parts) { expected.set(p, at); at += p.length; }
        expect(joined).toEqual(expected);
        const target = new Uint8Array(pad + expected.length);
        let off = pad;
        for (const f of frames) off = encodeFrameInto(f, target, off);
        expect(off).toBe(target.length);
        expect(target.subarray(pad)).toEqual(expected);
      }),
      { numRuns: 100 },
    );
  });
});

describe("streaming decoder", () => {
  it("yields the same frames for every way of splitting the same stream (random cuts)", () => {
    fc.assert(
      fc.property(
        fc.array(anyFrame, { minLength: 1, maxLength: 6 }).chain((frames) => {
          const stream = encodeFrames(frames);
          return fc.tuple(fc.constant(frames), fc.constant(stream), cutsOf(stream.length));
        }),
        ([frames, stream, cuts]) => {
          const out = decodeChunked(stream, cuts);
          expect(out.error).toBeNull();
          expect(out.partial).toBe(false);
          expect(out.frames).toEqual(frames);
          // each frame's body is its bytes as received: prefixed with its length again, they are the stream
          const rebuilt = out.bodies.flatMap((b) => [(b.length >>> 24) & 0xff, (b.length >>> 16) & 0xff, (b.length >>> 8) & 0xff, b.length & 0xff, ...b]);
          expect(rebuilt).toEqual([...stream]);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("every single cut point and one byte at a time give the same frames", () => {
    const frames = fc.sample(anyFrame, { numRuns: 6, seed: 7 });
    const stream = encodeFrames(frames);
    for (let c = 0; c <= stream.length; c++) {
      expect(decodeChunked(stream, [c]).frames).toEqual(frames);
    }
    const bytewise = Array.from({ length: stream.length }, (_, i) => i);
    expect(decodeChunked(stream, bytewise).frames).toEqual(frames);
  });

  it("a stream truncated anywhere inside a frame leaves exactly the whole frames and a partial one", () => {
    fc.assert(
      fc.property(fc.array(anyFrame, { minLength: 1, maxLength: 4 }), fc.nat(), (frames, k) => {
        const stream = encodeFrames(frames);
        const cut = k % stream.length; // 0..len-1, so the last frame is never complete
        const out = decodeChunked(stream.subarray(0, cut), []);
        const ends: number[] = [];
        let at = 0;
        for (const f of frames) { at += frameSize(f); ends.push(at); }
        const whole = ends.filter((e) => e <= cut).length;
        expect(out.frames).toEqual(frames.slice(0, whole));
        expect(out.partial).toBe(!ends.includes(cut) && cut > 0);
      }),
      { numRuns: 200 },
    );
  });

  it("random bytes only ever produce frames or a MortarError, and the decoder stays dead after one", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), cutsOf(512), (bytes, cuts) => {
        const d = new FrameDecoder();
        let at = 0;
        let error: MortarError | null = null;
        for (const c of [...cuts.filter((x) => x <= bytes.length), bytes.length]) {
          const out = d.push(bytes.subarray(at, c));
          if (error) expect(out).toEqual({ frames: [], bodies: [], error });
          error = out.error;
          if (error) expect(error).toBeInstanceOf(MortarError);
          at = c;
        }
      }),
      { numRuns: 1000 },
    );
  });

  it("a plausible header with a random payload never produces an untyped exception", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xff }), fc.uint8Array({ maxLength: 128 }), (op, payload) => {
        const bytes = new Uint8Array(5 + payload.length);
        new DataView(bytes.buffer).setUint32(0, 1 + payload.length);
        bytes[4] = op;
        bytes.set(payload, 5);
        const out = new FrameDecoder().push(bytes);
        expect(out.frames.length + (out.error ? 1 : 0)).toBe(1);
        if (out.error) expect(out.error).toBeInstanceOf(MortarError);
        try {
          decodeFrame(op, payload);
        } catch (e) {
          expect(e).toBeInstanceOf(MortarError);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("a valid frame with its payload cut short or extended is MALFORMED_PAYLOAD", () => {
    fc.assert(
      fc.property(anyFrame, fc.integer({ min: 1, max: 9 }), fc.boolean(), (f, n, longer) => {
        const bytes = encodeFrame(f);
        const payload = bytes.subarray(5);
        if (!longer && payload.length < n) return; // nothing to cut
        const changed = longer
          ? Uint8Array.from([...payload, ...new Uint8Array(n)])
          : payload.subarray(0, payload.length - n);
        try {
          decodeFrame(f.op, changed);
          // Cutting a trailing length-prefixed field's bytes always breaks the frame,
          // so a successful decode is a failure of the test.
          expect.unreachable(`decoded ${f.op} with ${longer ? "extra" : "missing"} ${n} bytes`);
        } catch (e) {
          expect(e).toBeInstanceOf(MortarError);
          expect((e as MortarError).name).toBe("MALFORMED_PAYLOAD");
        }
      }),
      { numRuns: 500 },
    );
  });
});
