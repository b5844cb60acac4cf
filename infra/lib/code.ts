/**
 * Where the Rust functions' code comes from.
 *
 * Two ways, because building Rust at synth time needs `cargo lambda` (and zig) or Docker:
 * - `SundialCode.fromAssets(dir)`: binaries already built, in cargo lambda's `--lambda-dir`
 *   layout (`{dir}/{tick,worker,api}/bootstrap`, `{dir}/worker-ecs/` as a Docker context).
 *   `infra/scripts/build-assets.sh` produces it; CI and `npm test` use it (or fake binaries), so
 *   no test compiles Rust. The package ships placeholders that synthesize but do not run.
 * - `SundialCode.fromSource({ manifestPath })`: every function is a `RustFunction` of
 *   `cargo-lambda-cdk` (the standard Rust-function construct), which runs
 *   `cargo lambda build --release --arm64 --bin <binary>` on the workspace at synth time, locally
 *   when `cargo lambda` is installed, else in its Docker image. Lambda code only: ECS pools then
 *   need `ecsImage` (the long-poll worker is a container, not a Lambda zip).
 */
import * as path from 'node:path';
import type { BundlingOptions } from 'cargo-lambda-cdk';

/** Building from source: the workspace and cargo-lambda-cdk's bundling options. */
export interface SundialSourceProps {
  /**
   * The Sundial workspace's `Cargo.toml` (or its directory): the repository root, whose
   * workspace holds the `tick`, `worker` and `api` binaries.
   */
  readonly manifestPath: string;
  /**
   * cargo-lambda-cdk bundling options (e.g. `forcedDockerBundling`, `cargoLambdaFlags`,
   * `profile`). `architecture` is always arm64: every Sundial function runs on Graviton.
   */
  readonly bundling?: Omit<BundlingOptions, 'architecture'>;
}

export type ResolvedCode =
  | { readonly kind: 'assets'; readonly dir: string }
  | { readonly kind: 'source'; readonly manifestPath: string; readonly bundling?: Omit<BundlingOptions, 'architecture'> };

/** The code of Sundial's functions (see the file header for the two choices). */
export abstract class SundialCode {
  /** Prebuilt binaries in cargo lambda's `--lambda-dir` layout. */
  public static fromAssets(dir: string): SundialCode {
    return new (class extends SundialCode {
      public resolve(): ResolvedCode {
        return { kind: 'assets', dir: path.resolve(dir) };
      }
    })();
  }

  /** Build every Lambda function from the Rust workspace at synth time with cargo-lambda-cdk. */
  public static fromSource(props: SundialSourceProps): SundialCode {
    return new (class extends SundialCode {
      public resolve(): ResolvedCode {
        return { kind: 'source', manifestPath: path.resolve(props.manifestPath), bundling: props.bundling };
      }
    })();
  }

  /** @internal What the construct builds functions from. */
  public abstract resolve(): ResolvedCode;
}
