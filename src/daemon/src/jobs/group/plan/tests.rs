// SPDX-License-Identifier: GPL-3.0-or-later
use partagpu_core::{CpuInfo, GpuProbeStatus, Limits, LoadAverage, MemoryInfo};

use super::*;

fn machine(name: &str, last: u8, sharing: SharingState, torch: Option<&str>) -> Candidate {
    Candidate {
        node_id: format!("{last:02x}").repeat(16),
        name: name.into(),
        address: Ipv4Addr::new(10, 98, 0, last),
        local: last == 1,
        state: NodeState {
            name: name.into(),
            version: "0.1.0".into(),
            sharing,
            limits: Limits::default_for(8 << 30),
            cpu: CpuInfo {
                model: "cpu".into(),
                cores: 2,
                usage_percent: 1.0,
            },
            memory: MemoryInfo {
                total_bytes: 8 << 30,
                available_bytes: 6 << 30,
            },
            load: LoadAverage {
                one: 0.0,
                five: 0.0,
                fifteen: 0.0,
            },
            gpus: Vec::new(),
            gpu_probe: GpuProbeStatus::Unavailable("none".into()),
            jobs_running: 0,
            runtimes: vec![RuntimeInfo {
                name: "torch".into(),
                python: "3.11.2".into(),
                torch: torch.map(str::to_owned),
                cuda: None,
            }],
        },
    }
}

fn room() -> Vec<Candidate> {
    vec![
        machine("lab-1", 1, SharingState::Sharing, Some("2.15.0")),
        machine("lab-2", 2, SharingState::Sharing, Some("2.15.0")),
        machine("lab-3", 3, SharingState::Paused, Some("2.15.0")),
        machine("lab-4", 4, SharingState::Sharing, Some("2.4.1")),
    ]
}

#[test]
fn only_fit_machines_are_chosen_and_refusals_name_the_machine() {
    let names = |chosen: Vec<Candidate>| chosen.into_iter().map(|c| c.name).collect::<Vec<_>>();
    let torch = Some("2.15.0");
    assert_eq!(
        names(choose(&room(), "", "torch", torch).unwrap()),
        ["lab-1", "lab-2"]
    );
    assert_eq!(names(choose(&room(), "1", "torch", torch).unwrap()), ["lab-1"]);
    let too_many = choose(&room(), "3", "torch", torch).unwrap_err();
    assert!(
        too_many.starts_with("3 machine(s) asked for, 2 can take part"),
        "{too_many}"
    );
    assert!(too_many.contains("lab-3 is paused by its owner"));
    assert_eq!(
        choose(&room(), "lab-2, lab-4", "torch", torch).unwrap_err(),
        "lab-4 has torch 2.4.1, the training needs 2.15.0 (runtime \"torch\")"
    );
    assert!(choose(&room(), "lab-9", "torch", torch)
        .unwrap_err()
        .contains("no member of the room is called"));
    assert!(choose(&room(), "", "jax", torch)
        .unwrap_err()
        .starts_with("no machine of the room can run"));
}

#[test]
fn each_part_runs_torchrun_against_rank_zero_and_may_reach_only_the_others() {
    let template: JobSpec = serde_json::from_value(serde_json::json!({
        "id": "00112233445566778899aabbccddeeff", "attempt": 0, "submitter": "ab".repeat(16),
        "argv": ["train.py", "--epochs", "2"], "workspace_bytes": 0,
        "workspace_sha256": "00".repeat(32), "artifacts": ["model.pt", "metrics.json"],
    }))
    .unwrap();
    let machines = choose(&room(), "", "torch", Some("2.15.0")).unwrap();
    let parts = parts(&template, &machines, 29412);
    assert_eq!(parts.len(), 2);
    let line = parts[1].spec.argv.join(" ");
    assert_eq!(
        line,
        format!(
            "torchrun --nnodes 2 --node-rank 1 --rdzv-backend static --master-addr 10.98.0.1 \
             --master-port 29412 --max-restarts 0 --nproc-per-node 1 --rdzv-id {} --local-addr 10.98.0.2 \
             train.py --epochs 2",
            template.id.to_hex()
        )
    );
    assert_eq!(parts[0].spec.artifacts, ["model.pt", "metrics.json"]);
    assert!(
        parts[1].spec.artifacts.is_empty(),
        "only rank 0 sends artifacts back"
    );
    assert_ne!(parts[0].spec.id, parts[1].spec.id);
    assert_eq!(
        parts[1].spec.id,
        part_id(&template.id, 1),
        "a retry names the same parts"
    );
    let NetworkMode::Peers { peers } = &parts[0].spec.network else {
        panic!("no network")
    };
    let reachable: Vec<String> = peers
        .iter()
        .map(|p| format!("{}:{}-{}", p.address, p.first_port, p.last_port))
        .collect();
    assert_eq!(
        reachable,
        [
            "10.98.0.1:29400-29499",
            "10.98.0.1:32768-60999",
            "10.98.0.2:29400-29499",
            "10.98.0.2:32768-60999"
        ]
    );
    parts.iter().for_each(|p| p.spec.validate().unwrap());
    let mut every_rank = template.clone();
    every_rank.artifacts_from_all_ranks = true;
    let parts = super::parts(&every_rank, &machines, 29412);
    assert_eq!(parts[1].spec.artifacts, ["model.pt", "metrics.json"]);
    assert!(
        parts.iter().all(|p| !p.spec.artifacts_from_all_ranks),
        "the parts themselves are plain jobs"
    );
}

#[test]
fn a_new_training_never_takes_a_rendezvous_port_an_open_one_uses() {
    let argv = |port: u16| -> Vec<String> {
        ["torchrun", "--master-port", &port.to_string(), "train.py"]
            .map(String::from)
            .to_vec()
    };
    let open: Vec<Vec<String>> = (RENDEZVOUS_PORTS.0..RENDEZVOUS_PORTS.1).map(argv).collect();
    // Every port but the last is taken: whatever the pick, the last one is chosen.
    for pick in [0, 1, 57, u32::MAX] {
        let port = rendezvous_port(open.iter().map(Vec::as_slice), pick);
        assert_eq!(port, RENDEZVOUS_PORTS.1);
    }
    let few = [argv(29400), vec!["python3".into(), "--master-port".into()]];
    let chosen: std::collections::BTreeSet<u16> = (0..200)
        .map(|pick| rendezvous_port(few.iter().map(Vec::as_slice), pick))
        .collect();
    assert!(!chosen.contains(&29400) && chosen.len() == 99, "{chosen:?}");
}

#[test]
fn an_elastic_training_takes_a_range_of_nodes_and_restarts_with_rank_zero_hosting_the_store() {
    let mut template: JobSpec = serde_json::from_value(serde_json::json!({
        "id": "00112233445566778899aabbccddeeff", "attempt": 0, "submitter": "ab".repeat(16),
        "argv": ["train.py"], "workspace_bytes": 0, "workspace_sha256": "00".repeat(32),
        "min_nodes": 1,
    }))
    .unwrap();
    let machines = choose(&room(), "", "torch", Some("2.15.0")).unwrap();
    let lines: Vec<String> = parts(&template, &machines, 29413)
        .iter()
        .map(|p| p.spec.argv.join(" "))
        .collect();
    for (rank, line) in lines.iter().enumerate() {
        assert_eq!(
            *line,
            format!(
                "torchrun --nnodes 1:2 --rdzv-backend c10d --rdzv-endpoint 10.98.0.1:29413 --rdzv-conf \
                 is_host={},join_timeout=120,last_call_timeout=5 --max-restarts 3 --nproc-per-node 1 \
                 --rdzv-id {} --local-addr 10.98.0.{} train.py",
                u8::from(rank == 0),
                template.id.to_hex(),
                rank + 1
            )
        );
    }
    let elastic = parts(&template, &machines, 29413);
    assert_eq!(
        elastic[1]
            .spec
            .env
            .get("PARTAGPU_COLLECTIVE_TIMEOUT_S")
            .map(String::as_str),
        Some("30")
    );
    // A machine joining a later round learns the workers' store address (see parts()).
    assert!(elastic
        .iter()
        .all(|p| p.spec.env.get(UNSHARED_STORE_ENV.0).map(String::as_str) == Some("1")));
    let names: Vec<Option<&str>> = elastic
        .iter()
        .map(|p| p.spec.env.get(MACHINE_ENV).map(String::as_str))
        .collect();
    assert_eq!(
        names,
        machines.iter().map(|m| Some(m.name.as_str())).collect::<Vec<_>>()
    );
    // The port is seen as taken by the next training, as a static one's is.
    let argvs: Vec<Vec<String>> = parts(&template, &machines, 29413)
        .into_iter()
        .map(|p| p.spec.argv)
        .collect();
    assert_ne!(rendezvous_port(argvs.iter().map(Vec::as_slice), 13), 29413);
    // As many as there are machines: nothing to be elastic about, the static rendezvous.
    template.min_nodes = Some(2);
    assert!(parts(&template, &machines, 29413)[0]
        .spec
        .argv
        .contains(&"static".to_owned()));
}

#[test]
fn a_launch_that_admits_an_earlier_machine_can_give_it_the_same_part_later() {
    let template: JobSpec = serde_json::from_value(serde_json::json!({
        "id": "00112233445566778899aabbccddeeff", "attempt": 4, "submitter": "ab".repeat(16),
        "argv": ["train.py"], "workspace_bytes": 0, "workspace_sha256": "00".repeat(32),
        "min_nodes": 1, "artifacts": ["model.pt"],
    }))
    .unwrap();
    let all = choose(&room(), "", "torch", Some("2.15.0")).unwrap();
    let (lost, survivor) = (&all[0], &all[1]);
    // Lost node 0 (lab-1) is admitted; lab-2 alone starts it, as node 0.
    let layout = layout(
        std::slice::from_ref(survivor),
        29420,
        &[lost.address, survivor.address],
    );
    assert_eq!(layout.nodes, 2, "the survivor's address is not counted twice");
    assert!(admits(&layout, lost.address) && !admits(&layout, Ipv4Addr::new(10, 98, 0, 9)));
    let first = part(&template, &layout, survivor, 0);
    assert_eq!(
        first.spec.argv.join(" "),
        format!(
            "torchrun --nnodes 1:2 --rdzv-backend c10d --rdzv-endpoint 10.98.0.2:29420 --rdzv-conf \
             is_host=1,join_timeout=120,last_call_timeout=5 --max-restarts 3 --nproc-per-node 1 \
             --rdzv-id {} --local-addr 10.98.0.2 train.py",
            template.id.to_hex()
        ),
        "elastic with one machine: another may join"
    );
    // The layout survives being kept, and the joining part matches the others.
    let kept: Layout = serde_json::from_slice(&serde_json::to_vec(&layout).unwrap()).unwrap();
    let joining = part(&template, &kept, lost, 1);
    assert_eq!(joining.spec.network, first.spec.network);
    assert_eq!(joining.spec.id, part_id(&template.id, 1));
    assert_eq!(joining.spec.attempt, 4);
    assert!(
        joining.spec.artifacts.is_empty(),
        "only node 0 saves the artifacts"
    );
    let line = joining.spec.argv.join(" ");
    assert!(
        line.contains("--rdzv-endpoint 10.98.0.2:29420") && line.contains("is_host=0"),
        "{line}"
    );
    assert!(line.contains("--local-addr 10.98.0.1"), "{line}");
    assert_eq!(
        joining.spec.env.get(MACHINE_ENV).map(String::as_str),
        Some("lab-1")
    );
    assert_eq!(
        joining.spec.env.get(UNSHARED_STORE_ENV.0).map(String::as_str),
        Some("1")
    );
}
