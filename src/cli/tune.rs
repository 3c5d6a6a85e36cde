//! `tolerant tune INPUT`: which breaker settings to ship — the advisor's search on `breaker::sim` for the input's
//! traffic, failure profiles, cost weights and constraints; the recommendation and why, the Pareto front as a
//! table and an SVG, the team's current config (`--current FILE`, in Tolerant's TOML or a library's format,
//! told by `--library` or recognised from the file) placed on it, and the study's three decisions. `--json`
//! prints the same with the keys `recommended`, `why`, `front` and `current`; `--format LIBRARY` restricts the
//! search to what that library can express and prints the recommendation in its format; `--verify` runs the
//! current config and the top candidates as one experiment and sets the measured costs beside the predicted.
//! A bad input exits with status 2 and an error naming the field and its line.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use controller::advisor::{self, AdviseOptions, CurrentConfig, Library, TuneInput};

use crate::cli::output::{err_out, out, out_text};

/// Exit status of an input, a current config or a format that cannot be used.
pub const EXIT_BAD_INPUT: i32 = 2;

#[derive(Debug, Args)]
pub struct TuneArgs {
    /// The advisor's input (TOML: traffic, profiles, costs, constraints; see experiments/README.md).
    pub input: PathBuf,
    /// The team's current breaker config: Tolerant's TOML, or a library's file (see --library).
    #[arg(long, value_name = "FILE")]
    pub current: Option<PathBuf>,
    /// The library --current is written for: resilience4j, polly, gobreaker, pybreaker, opossum (recognised from
    /// the file when left out; a .toml file is Tolerant's own).
    #[arg(long)]
    pub library: Option<Library>,
    /// The Resilience4j instance of --current, when the file has several.
    #[arg(long)]
    pub instance: Option<String>,
    /// Print the recommendation in this library's format (the search keeps to what it can express).
    #[arg(long, value_name = "resilience4j|polly|gobreaker|pybreaker|opossum")]
    pub format: Option<Library>,
    /// Run the current config and the top candidates as an experiment and compare measured with predicted cost.
    #[arg(long)]
    pub verify: bool,
    /// Where to write the front's SVG.
    #[arg(long, value_name = "FILE", default_value = "tune-front.svg")]
    pub svg: PathBuf,
    #[command(flatten)]
    pub execute: super::controller::ExecuteArgs,
}

/// The current config from `--current`: Tolerant's TOML or a library's file.
fn current_config(args: &TuneArgs) -> anyhow::Result<Option<CurrentConfig>> {
    let Some(path) = &args.current else {
        return Ok(None);
    };
    let text =
        advisor::read_capped(path).with_context(|| format!("--current {}", path.display()))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let library = args.library.or_else(|| {
        (!name.ends_with(".toml"))
            .then(|| Library::recognise(&name, &text))
            .flatten()
    });
    CurrentConfig::read(&text, library, args.instance.as_deref())
        .map(Some)
        .with_context(|| format!("--current {}", path.display()))
}

pub async fn run(args: TuneArgs) -> anyhow::Result<()> {
    let input = match TuneInput::from_file(&args.input) {
        Ok(input) => input,
        Err(error) => {
            err_out!("{}: {error}", args.input.display());
            std::process::exit(EXIT_BAD_INPUT);
        }
    };
    let current = match current_config(&args) {
        Ok(current) => current,
        Err(error) => {
            err_out!("{error:#}");
            std::process::exit(EXIT_BAD_INPUT);
        }
    };
    let options = AdviseOptions {
        library: args.format,
        candidates: None,
    };
    let advice = match advisor::advise(&input, current.as_ref(), &options) {
        Ok(advice) => advice,
        Err(error) => {
            err_out!("{}: {error}", args.input.display());
            std::process::exit(EXIT_BAD_INPUT);
        }
    };
    let svg = advice.svg().context("the front's SVG")?;
    std::fs::write(&args.svg, svg).with_context(|| format!("--svg {}", args.svg.display()))?;
    let exported = args
        .format
        .map(|library| {
            library
                .export(&advice.recommended.config, &input.name, &[])
                .map(|exported| (library, exported))
        })
        .transpose()
        .context("--format")?;
    if args.execute.json {
        let mut json = advice.to_json();
        if args.verify {
            let verification = verify(&input, &advice, current.as_ref(), args.execute).await?;
            // The same four keys: what the experiment measured goes under `why`.
            json["why"]["verification"] = serde_json::to_value(&verification)?;
        }
        out!("{}", serde_json::to_string_pretty(&json)?);
        return Ok(());
    }
    out_text!("{}", advice.to_text());
    out!("front written to {}", args.svg.display());
    if let Some((library, exported)) = exported {
        out!("\nrecommended, as {library}:\n");
        out_text!("{}", exported.text);
        for note in exported.notes {
            out!("  {}: {} — {}", note.field, note.kind.as_str(), note.note);
        }
    }
    if args.verify {
        let verification = verify(&input, &advice, current.as_ref(), args.execute).await?;
        out_text!("{}", verification.to_text());
    }
    Ok(())
}

/// `--verify`: the experiment, run through `tolerant run`'s code path, then predicted against measured.
async fn verify(
    input: &TuneInput,
    advice: &advisor::Advice,
    current: Option<&CurrentConfig>,
    execute: super::controller::ExecuteArgs,
) -> anyhow::Result<advisor::verify::Verification> {
    let own = match &input.verify.spec {
        Some(path) => Some(
            advisor::read_capped(path)
                .with_context(|| format!("verify.spec: cannot read {}", path.display()))?,
        ),
        None => None,
    };
    let plan = advisor::verify::plan(input, advice, current, own.as_deref())?;
    let spec = controller::spec::ExperimentSpec::parse(&plan.spec_toml)
        .context("the verification's experiment spec")?;
    err_out!(
        "verifying {} configs × {} profiles × {} rounds as experiment \"{}\"",
        plan.candidates.len(),
        input.profiles.len(),
        input.verify.rounds,
        spec.name
    );
    let store = super::stored::open_store(&execute.db).await?;
    let experiment = super::controller::execute_quietly(
        &store,
        &spec,
        controller::runner::StartChoice::Fresh,
        execute,
    )
    .await?;
    Ok(advisor::verify::measured(&store, experiment, &plan).await?)
}
