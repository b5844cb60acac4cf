//! `sundial provision` and `sundial health`.

use anyhow::Context;
use sundial_core::aws::Clients;
use sundial_core::config::Config;
use sundial_store::tables;

/// Where to provision.
#[derive(clap::Args)]
pub(crate) struct ProvisionArgs {
    /// Prefix of every table and queue name (lets several local stacks share one emulator).
    #[arg(long, default_value = "")]
    prefix: String,
    /// Worker pools to create queues for.
    #[arg(long, value_delimiter = ',', default_value = "default")]
    pools: Vec<String>,
    /// Logical shard count.
    #[arg(long, default_value_t = 64)]
    shards: u32,
}

pub(crate) async fn run(args: ProvisionArgs, check_only: bool) -> anyhow::Result<()> {
    for p in &args.pools {
        sundial_core::config::validate_pool_name(p).map_err(|e| anyhow::anyhow!("--pools: {e}"))?;
    }
    let pools: Vec<&str> = args.pools.iter().map(String::as_str).collect();
    let cfg = Config::local(&args.prefix, &pools, args.shards);
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| "(AWS default endpoint)".into());
    let clients = Clients::from_env().await;
    if check_only {
        let listed = tables::table_names(&clients.ddb, None).await.map_err(anyhow::Error::from_boxed);
        let names = listed.with_context(|| {
            format!("the emulator at {endpoint} does not answer; start it with localstack/start.sh")
        })?;
        for t in [&cfg.jobs_table, &cfg.executions_table] {
            anyhow::ensure!(names.contains(t), "table {t} is missing; run `sundial provision`");
        }
        for p in &cfg.pools {
            clients.sqs.get_queue_url().queue_name(cfg.queue_name(p)).send().await.with_context(|| {
                format!("queue {} is missing; run `sundial provision`", cfg.queue_name(p))
            })?;
        }
        println!(
            "sundial healthy: endpoint {endpoint}, tables {} and {}, pools {}",
            cfg.jobs_table,
            cfg.executions_table,
            cfg.pools.join(",")
        );
        return Ok(());
    }
    let queues = sundial_testkit::provision::ensure_all(&clients, &cfg).await.with_context(|| {
        format!("provisioning on {endpoint} (is the emulator running? localstack/start.sh)")
    })?;
    println!("tables: {} {}", cfg.jobs_table, cfg.executions_table);
    for (pool, q) in queues {
        println!("pool {pool}: {} (dlq {})", q.url, q.dlq_url);
    }
    Ok(())
}
