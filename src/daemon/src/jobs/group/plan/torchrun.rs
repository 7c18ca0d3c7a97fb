// SPDX-License-Identifier: GPL-3.0-or-later
//! The torchrun command line of a part: the rendezvous (static, or c10d for an elastic
//! training), the processes, and the address the workers are reached at.

use partagpu_core::job::spec::JobSpec;

use super::{Candidate, Layout, ELASTIC_RESTARTS};

/// How long the first rendezvous of an elastic training waits for its machines.
const ELASTIC_JOIN_S: u32 = 120;
/// Once `min_nodes` have joined a later round, how long it waits for more (a returning machine).
const ELASTIC_LAST_CALL_S: u32 = 5;

/// torchrun's own arguments for node `rank` of a launch of `layout` (`count`: its most nodes).
///
/// Without `min_nodes`, the static rendezvous keeps the node ranks given here: rank 0 (which
/// saves the artifacts) is where the coordinator expects it and hosts the store, and a lost
/// machine ends the training. With `min_nodes`, the c10d rendezvous takes `min..count` nodes
/// and the agents restart the workers (which resume from their checkpoint) when one is lost;
/// node rank 0 still hosts the store (`is_host`), so it must stay.
pub(super) fn launcher(
    template: &JobSpec,
    layout: &Layout,
    rank: u32,
    processes: u32,
    machine: &Candidate,
) -> Vec<String> {
    let (count, master) = (layout.nodes, &layout.master);
    let mut argv: Vec<String> = vec!["torchrun".into()];
    let elastic = template
        .min_nodes
        .filter(|&min| (min as usize) < count)
        .map(|min| min.max(1));
    let push = |argv: &mut Vec<String>, items: &[&str]| argv.extend(items.iter().map(|s| (*s).to_owned()));
    match elastic {
        None => push(
            &mut argv,
            &[
                "--nnodes",
                &count.to_string(),
                "--node-rank",
                &rank.to_string(),
                "--rdzv-backend",
                "static",
                "--master-addr",
                &master.0,
                "--master-port",
                &master.1,
                "--max-restarts",
                "0",
            ],
        ),
        Some(min) => push(
            &mut argv,
            &[
                "--nnodes",
                &format!("{min}:{count}"),
                "--rdzv-backend",
                "c10d",
                "--rdzv-endpoint",
                &format!("{}:{}", master.0, master.1),
                "--rdzv-conf",
                &format!(
                    "is_host={},join_timeout={ELASTIC_JOIN_S},last_call_timeout={ELASTIC_LAST_CALL_S}",
                    u8::from(rank == 0)
                ),
                "--max-restarts",
                &ELASTIC_RESTARTS.to_string(),
            ],
        ),
    }
    push(
        &mut argv,
        &[
            "--nproc-per-node",
            &processes.to_string(),
            "--rdzv-id",
            &template.id.to_hex(),
            // Workers reach each other at this address, not at a sandbox host name.
            "--local-addr",
            &machine.address.to_string(),
        ],
    );
    argv
}
