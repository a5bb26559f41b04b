/**
 * Sampling a batched step (batched-decode.ts): each member's next token from its logit row of the
 * step's decode, with its own node-llama-cpp sampler (made on first use), all at once on libuv's
 * thread pool. On our engine build a greedy member's sampler takes the first token of highest
 * logit straight from the row (addon/greedy-token.diff), without a candidate array.
 */
import type { LlamaModel, Token } from "node-llama-cpp";

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
  constructor(private readonly model: LlamaModel) {}

  /** Each member's token from its row (`rows`: member and batch index); an error is the member's alone. */
  sample<M extends SamplingMember>(
    ctx: { sampleToken(batchLogitIndex: number, sampler: AddonSampler): Promise<number> },
    rows: ReadonlyArray<readonly [M, number]>,
  ): Promise<Sampled<M>[]> {
    return Promise.all(
      rows.map(async ([member, index]): Promise<Sampled<M>> => {
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
    );
  }

  private newSampler(): AddonSampler {
    const llama = (
      this.model as unknown as { _llama: { _bindings: { AddonSampler: new (m: unknown) => AddonSampler } } }
    )._llama;
    return new llama._bindings.AddonSampler((this.model as unknown as { _model: unknown })._model);
  }
}
