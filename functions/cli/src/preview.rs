//! `sundial preview` (filled by the Schedule engine issue).

/// Arguments of `sundial preview`.
#[derive(clap::Args)]
pub(crate) struct PreviewArgs {
    /// The schedule expression.
    expression: String,
}

pub(crate) fn run(args: PreviewArgs) -> anyhow::Result<()> {
    anyhow::bail!("preview of {:?} is not implemented yet", args.expression)
}
