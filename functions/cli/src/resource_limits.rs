//! `sundial resources put|get|list|delete`: platform-wide resource limits through the API
//! (docs/resources.md). Putting and deleting needs an operator tenant's credentials.

use crate::api_cmds::{print_json, s, table, to_json};
use crate::client::{ApiArgs, Output};
use serde_json::Value;

/// `sundial resources ...`
#[derive(clap::Subcommand, Debug)]
pub(crate) enum ResourcesCmd {
    /// Set a resource's limit: at most LIMIT executions hold it at once, across every tenant
    /// (operators only).
    Put {
        /// Resource name (`legacy-db`).
        resource: String,
        /// Executions at once (0-10000; 0 holds every execution that uses it).
        #[arg(long)]
        limit: u32,
        /// Most units one tenant may hold at once (1 to the limit; default half the limit,
        /// rounded up).
        #[arg(long)]
        per_tenant: Option<u32>,
    },
    /// Show a resource's limit and one tenant's share (operators: how many executions hold it
    /// now, and which).
    Get {
        /// Resource name.
        resource: String,
    },
    /// List every resource limit.
    List,
    /// Delete a resource limit (operators only); executions of jobs still using it then wait.
    Delete {
        /// Resource name.
        resource: String,
    },
}

fn row(r: &Value) -> Vec<String> {
    vec![
        s(&r["resource"]),
        s(&r["limit"]),
        s(&r["perTenant"]),
        s(&r["holding"]),
        s(&r["version"]),
        s(&r["updatedAt"]),
    ]
}

const HEADERS: [&str; 6] = ["RESOURCE", "LIMIT", "PER TENANT", "HOLDING", "VERSION", "UPDATED"];

/// Runs `sundial resources ...`.
pub(crate) async fn resources(args: &ApiArgs, cmd: ResourcesCmd) -> anyhow::Result<()> {
    let c = args.client().await?;
    let v = match cmd {
        ResourcesCmd::Put { resource, limit, per_tenant } => {
            to_json(&c.put_resource_shared(&resource, limit, per_tenant).await?)?
        }
        ResourcesCmd::Get { resource } => to_json(&c.get_resource(&resource).await?)?,
        ResourcesCmd::List => to_json(&c.list_resources().await?.items)?,
        ResourcesCmd::Delete { resource } => {
            let v = to_json(&c.delete_resource(&resource).await?)?;
            if args.output == Output::Json {
                print_json(&v);
            } else {
                println!("deleted {resource}");
            }
            return Ok(());
        }
    };
    if args.output == Output::Json {
        print_json(&v);
        return Ok(());
    }
    let rows: Vec<Vec<String>> = match v.as_array() {
        Some(all) => all.iter().map(row).collect(),
        None => vec![row(&v)],
    };
    println!("{}", table(&HEADERS, &rows));
    for h in v["holders"].as_array().into_iter().flatten() {
        println!("  held by {} until {}", s(&h["executionId"]), s(&h["leaseUntil"]));
    }
    Ok(())
}

/// `sundial pools`: every worker pool's queues (operators only).
pub(crate) async fn pools(args: &ApiArgs) -> anyhow::Result<()> {
    let c = args.client().await?;
    let v = to_json(&c.list_pools().await?)?;
    if args.output == Output::Json {
        print_json(&v);
        return Ok(());
    }
    let rows: Vec<Vec<String>> = v["pools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let lane =
                |l: &str| format!("{}/{}/{}", s(&p[l]["visible"]), s(&p[l]["inFlight"]), s(&p[l]["delayed"]));
            let saturation =
                p["saturation"].as_f64().map_or_else(String::new, |x| format!("{:.0} %", x * 100.0));
            vec![
                s(&p["pool"]),
                lane("main"),
                lane("low"),
                s(&p["deadLetters"]["visible"]),
                s(&p["capacity"]),
                saturation,
            ]
        })
        .collect();
    let headers = [
        "POOL",
        "MAIN WAIT/FLIGHT/DELAYED",
        "LOW WAIT/FLIGHT/DELAYED",
        "DEAD LETTERS",
        "CAPACITY",
        "SATURATION",
    ];
    println!("{}", table(&headers, &rows));
    println!("read at {}", s(&v["observedAt"]));
    Ok(())
}
