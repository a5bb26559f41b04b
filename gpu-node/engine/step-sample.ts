/**
 * Sampling a batched step (batched-decode.ts): each member's next token from its logit row of the
 * step's decode. On our engine build the greedy members' tokens come from one native call for all
 * of them (`greedyPick` in native/addon/KvgraftState.cpp: the rows split over a few threads),
 * where a sampler call each costs a pass through libuv's four threads and a promise: on an H100
 * with the `12b` preset (262,144 logits a row), 48 slots at 120 req/s, it took the sample phase
 * from 9.8 to 4.3 ms a step and served 12% more (docs/benchmarks.md, fifth round). The engine
 * turns it on for a GPU backend only (`greedyPick`): on a 2-core CPU its threads compete with
 * llama.cpp's and the phase was slower. The pick is the same: the first token of highest logit,
 * as llama.cpp's greedy sampler (and node-llama-cpp's path on our build, addon/greedy-token.diff)
 * picks it. The others, and every member without the pick, sample with their own samplers.
 */
import type { LlamaModel, Token } from "node-llama-cpp";
import type { NativeStateApi } from "./state-memory.js";

/** How a member samples; temperature 0 is greedy. */
export interface StepSampling {
  temperature: number;
  topK?: number;
  topP?: number;
  seed?: number;
}

/** node-llama-cpp 3.21.1's addon sampler, as the batch loop calls it. */
export interface AddonSampler {
  applyConfig(config: object): void;
  dispose(): void;
}

/** What sampling needs of a member: its settings, node-llama-cpp's config and its sampler, made on first use. */
export interface SamplingMember {
  readonly sampling: StepSampling;
  readonly config: object;
  sampler: AddonSampler | null;
}

/** A member's sampled token, or why it has none. */
export type Sampled<M> = { member: M; token: Token | null; err?: unknown };

/** Samples the members of each step of one context. */
export class StepSampler {
  constructor(
    private readonly model: LlamaModel,
    private readonly nativeApi: NativeStateApi | null,
  ) {}

  /** Each member's token from its row (`rows`: member and batch index); an error is the member's alone. */
  async sample<M extends SamplingMember>(
    ctx: { sampleToken(batchLogitIndex: number, sampler: AddonSampler): Promise<number> },
    rows: ReadonlyArray<readonly [M, number]>,
  ): Promise<Sampled<M>[]> {
    const picks = (m: M) => this.nativeApi !== null && m.sampling.temperature === 0;
    const greedy = rows.filter(([m]) => picks(m));
    const others = rows.filter(([m]) => !picks(m));
    const [fromPick, fromSamplers] = await Promise.all([
      greedy.length > 0 ? this.pickGreedy(ctx, greedy) : [],
      Promise.all(
        others.map(async ([member, index]): Promise<Sampled<M>> => {
          try {
            member.sampler ??= this.newSampler();
            member.sampler.applyConfig(member.config);
            const token = await ctx.sampleToken(index, member.sampler);
            if (token === -1) throw new Error("failed to sample the next token");
            return { member, token: token as Token };
          } catch (err) {
            return { member, token: null, err };
          }
        }),
      ),
    ]);
    return [...fromPick, ...fromSamplers];
  }

  /** The greedy members' tokens in one greedyPick; on failure, each of them gets the error. */
  private async pickGreedy<M>(
    ctx: unknown,
    rows: ReadonlyArray<readonly [M, number]>,
  ): Promise<Sampled<M>[]> {
    try {
      const api = this.nativeApi as NativeStateApi;
      const tokens = await api.greedyPick(ctx, Uint32Array.from(rows.map(([, index]) => index)));
      return rows.map(([member], i) => ({ member, token: tokens[i] as Token }));
    } catch (err) {
      return rows.map(([member]) => ({ member, token: null, err }));
    }
  }

  private newSampler(): AddonSampler {
    const llama = (
      this.model as unknown as { _llama: { _bindings: { AddonSampler: new (m: unknown) => AddonSampler } } }
    )._llama;
    return new llama._bindings.AddonSampler((this.model as unknown as { _model: unknown })._model);
  }
}
