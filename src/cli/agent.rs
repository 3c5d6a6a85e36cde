//! `tolerant agent`: the standalone fault-injection sidecar.

#[derive(Debug, clap::Args)]
pub struct AgentArgs {}

pub async fn run(_args: AgentArgs) -> anyhow::Result<()> {
    anyhow::bail!("the sidecar agent is not built yet")
}
