// SPDX-License-Identifier: GPL-3.0-or-later
//! Tests of job specs: the wire form, the defaults and every rule.

use serde_json::{json, Value};

use super::*;
use crate::job::workspace::MAX_WORKSPACE_BYTES;

fn minimal() -> Value {
    json!({
        "id": "00112233445566778899aabbccddeeff",
        "attempt": 0,
        "submitter": "ab".repeat(16),
        "argv": ["python3", "train.py"],
        "workspace_bytes": 1024,
        "workspace_sha256": "0f".repeat(32),
    })
}

fn parse(v: &Value) -> Result<JobSpec, JobSpecError> {
    JobSpec::parse(&serde_json::to_vec(v).unwrap())
}

fn with(key: &str, value: Value) -> Result<JobSpec, JobSpecError> {
    let mut v = minimal();
    v[key] = value;
    parse(&v)
}

#[test]
fn a_minimal_spec_gets_the_defaults() {
    let spec = parse(&minimal()).unwrap();
    assert_eq!(spec.time_limit_s, DEFAULT_TIME_LIMIT_S);
    assert_eq!(spec.network, NetworkMode::None);
    assert_eq!(spec.resources, JobResources::default());
    assert!(spec.env.is_empty() && spec.artifacts.is_empty() && spec.runtime.is_none());
    let back: JobSpec = serde_json::from_str(&serde_json::to_string(&spec).unwrap()).unwrap();
    assert_eq!(back, spec);
}

#[test]
fn ids_and_keys_have_their_agreed_forms() {
    let id: JobId = "00112233445566778899aabbccddeeff".parse().unwrap();
    assert_eq!(id.to_string(), "00112233445566778899aabbccddeeff");
    assert_eq!(
        serde_json::to_string(&id).unwrap(),
        "\"00112233445566778899aabbccddeeff\""
    );
    assert_eq!(JobId::from_random([0xab; 16]).to_hex(), "ab".repeat(16));
    for bad in ["", "0011", &"g".repeat(32), &"0".repeat(33)] {
        assert!(bad.parse::<JobId>().is_err(), "{bad}");
    }
    assert!(serde_json::from_str::<JobId>("\"xyz\"").is_err());
    let spec = parse(&minimal()).unwrap();
    let key = spec.key();
    assert_eq!(key.dir_name(), "abababababab-00112233445566778899aabbccddeeff-0");
    let json = serde_json::to_string(&key).unwrap();
    assert_eq!(serde_json::from_str::<JobKey>(&json).unwrap(), key);
}

#[test]
fn the_network_mode_is_tagged() {
    let peers =
        json!({"mode": "peers", "peers": [{"address": "10.0.0.2", "first_port": 29500, "last_port": 29510}]});
    let spec = with("network", peers).unwrap();
    let NetworkMode::Peers { peers } = &spec.network else {
        panic!("not peers")
    };
    assert_eq!(peers[0].address, Ipv4Addr::new(10, 0, 0, 2));
    assert_eq!(
        serde_json::to_value(NetworkMode::None).unwrap(),
        json!({"mode": "none"})
    );
    assert!(with("network", json!({"mode": "internet"})).is_err());
}

#[test]
fn unknown_fields_and_oversize_specs_are_refused() {
    let mut v = minimal();
    v["privileged"] = json!(true);
    assert!(matches!(parse(&v), Err(JobSpecError::Json(m)) if m.contains("privileged")));
    let huge = vec![b' '; MAX_SPEC_BYTES + 1];
    assert_eq!(
        JobSpec::parse(&huge),
        Err(JobSpecError::TooLarge {
            bytes: MAX_SPEC_BYTES + 1
        })
    );
    assert!(matches!(JobSpec::parse(b"{"), Err(JobSpecError::Json(_))));
}

#[test]
fn identity_fields_are_checked() {
    assert_eq!(with("attempt", json!(1001)), Err(JobSpecError::Attempt(1001)));
    assert!(with("attempt", json!(1000)).is_ok());
    for bad in ["AB".repeat(16), "ab".repeat(15), "zz".repeat(16)] {
        assert!(matches!(
            with("submitter", json!(bad)),
            Err(JobSpecError::Submitter(_))
        ));
    }
    assert!(matches!(
        with("workspace_sha256", json!("0F".repeat(32))),
        Err(JobSpecError::WorkspaceSha256(_))
    ));
    let too_big = MAX_WORKSPACE_BYTES + 1;
    assert_eq!(
        with("workspace_bytes", json!(too_big)),
        Err(JobSpecError::WorkspaceTooLarge(too_big))
    );
}

#[test]
fn the_command_is_checked() {
    assert_eq!(with("argv", json!([])), Err(JobSpecError::ArgCount(0)));
    assert_eq!(
        with("argv", json!(vec!["a"; 257])),
        Err(JobSpecError::ArgCount(257))
    );
    assert!(with("argv", json!(vec!["a"; 256])).is_ok());
    assert_eq!(
        with("argv", json!(["a", ""])),
        Err(JobSpecError::ArgLength { index: 1, bytes: 0 })
    );
    let long = "a".repeat(MAX_ARG_BYTES + 1);
    assert!(matches!(
        with("argv", json!([long])),
        Err(JobSpecError::ArgLength { index: 0, .. })
    ));
    assert_eq!(with("argv", json!(["a\u{0}b"])), Err(JobSpecError::ArgNul(0)));
    // 20 arguments of 4000 bytes: each fine, the total over 64 KiB (and under the spec cap
    // only because of that). The spec cap is 64 KiB too, so build the spec in memory.
    let mut spec = parse(&minimal()).unwrap();
    spec.argv = vec!["a".repeat(4000); 20];
    assert_eq!(spec.validate(), Err(JobSpecError::ArgvTooLarge(80_000)));
}

#[test]
fn the_environment_follows_the_allow_list() {
    for ok in [
        "PYTHONUNBUFFERED",
        "LC_ALL",
        "TORCH_HOME",
        "NCCL_DEBUG",
        "OMP_NUM_THREADS",
        "PARTAGPU_X",
    ] {
        assert_eq!(check_env_name(ok), Ok(()), "{ok}");
    }
    for reserved in [
        "PATH",
        "HOME",
        "CUDA_VISIBLE_DEVICES",
        "LD_PRELOAD",
        "CUDA_MPS_PIPE_DIRECTORY",
    ] {
        let err = check_env_name(reserved).unwrap_err();
        assert_eq!(err, JobSpecError::EnvReserved(reserved.into()));
        assert!(err.to_string().contains("set by the service"));
    }
    assert_eq!(
        check_env_name("PYTHONPATH"),
        Err(JobSpecError::EnvNotAllowed("PYTHONPATH".into()))
    );
    for malformed in ["", "lower", "1ABC", "A-B", "TORCH_é", &"A".repeat(129)] {
        assert!(
            matches!(check_env_name(malformed), Err(JobSpecError::EnvName(_))),
            "{malformed}"
        );
    }
    let env: BTreeMap<String, String> = (0..65).map(|i| (format!("TORCH_{i}"), "1".into())).collect();
    assert_eq!(with("env", json!(env)), Err(JobSpecError::TooManyEnv(65)));
    let long = "v".repeat(MAX_ENV_VALUE_BYTES + 1);
    assert!(matches!(
        with("env", json!({"LANG": long})),
        Err(JobSpecError::EnvValueTooLong { .. })
    ));
    assert_eq!(
        with("env", json!({"TZ": "a\u{0}"})),
        Err(JobSpecError::EnvValueNul("TZ".into()))
    );
}

#[test]
fn runtime_resources_and_limits_are_checked() {
    assert!(with("runtime", json!("pytorch-2.4_cu12.1")).is_ok());
    for bad in ["", "-x", "Py", "a/b", &"a".repeat(33)] {
        assert!(
            matches!(with("runtime", json!(bad)), Err(JobSpecError::Runtime(_))),
            "{bad}"
        );
    }
    assert_eq!(
        with("resources", json!({"cpu_percent": 101})),
        Err(JobSpecError::CpuPercent(101))
    );
    assert_eq!(
        with("resources", json!({"gpus": 17})),
        Err(JobSpecError::Gpus(17))
    );
    let ram = MAX_RAM_BYTES + 1;
    assert_eq!(
        with("resources", json!({"ram_bytes": ram})),
        Err(JobSpecError::Ram(ram))
    );
    assert!(with("resources", json!({"cpu_percent": 100, "gpus": 16})).is_ok());
    assert_eq!(with("time_limit_s", json!(0)), Err(JobSpecError::TimeLimit(0)));
    assert_eq!(
        with("time_limit_s", json!(604_801)),
        Err(JobSpecError::TimeLimit(604_801))
    );
    assert!(with("time_limit_s", json!(604_800)).is_ok());
    assert_eq!(with("min_nodes", json!(0)), Err(JobSpecError::MinNodes(0)));
    assert_eq!(with("min_nodes", json!(257)), Err(JobSpecError::MinNodes(257)));
    assert_eq!(with("min_nodes", json!(2)).map(|s| s.min_nodes), Ok(Some(2)));
}

#[test]
fn the_checkpoint_to_start_from_is_one_plain_file_of_at_most_2_gib() {
    let checkpoint = |name: &str, size: u64, sha: &str| json!({"name": name, "size": size, "sha256": sha});
    let sha = "ab".repeat(32);
    let two_gib = crate::job::checkpoint::MAX_CHECKPOINT_BYTES;
    // Far above a workspace's 16 MiB: that is what it is for.
    let spec = with(
        "resume_checkpoint",
        checkpoint("partagpu-checkpoint.pt", two_gib, &sha),
    )
    .unwrap();
    assert_eq!(spec.resume_checkpoint.as_ref().map(|c| c.size), Some(two_gib));
    let back: JobSpec = serde_json::from_str(&serde_json::to_string(&spec).unwrap()).unwrap();
    assert_eq!(back, spec);
    assert_eq!(
        with("resume_checkpoint", checkpoint("c.pt", two_gib + 1, &sha)),
        Err(JobSpecError::CheckpointTooLarge(two_gib + 1))
    );
    for name in [
        "../c.pt",
        "dir/c.pt",
        ".hidden",
        "partagpu-checkpoint.json",
        "",
        "c*.pt",
    ] {
        let refused = with("resume_checkpoint", checkpoint(name, 1, &sha));
        assert!(
            matches!(refused, Err(JobSpecError::CheckpointName(_))),
            "{name:?}: {refused:?}"
        );
    }
    assert_eq!(
        with("resume_checkpoint", checkpoint("c.pt", 1, &"AB".repeat(32))),
        Err(JobSpecError::CheckpointSha256("AB".repeat(32)))
    );
    // Absent from the JSON of a spec without one (older members parse it).
    let plain = serde_json::to_value(parse(&minimal()).unwrap()).unwrap();
    assert!(plain.get("resume_checkpoint").is_none());
}

#[test]
fn artifacts_and_peers_are_checked() {
    assert!(with("artifacts", json!(["out/*.pt"])).is_ok());
    assert!(matches!(
        with("artifacts", json!(["../x"])),
        Err(JobSpecError::Artifact(_))
    ));
    assert_eq!(
        with("artifacts", json!(vec!["a"; 65])),
        Err(JobSpecError::TooManyArtifacts(65))
    );
    let peer = |address: &str, first: u16, last: u16| {
        with(
            "network",
            json!({"mode": "peers", "peers": [{"address": address, "first_port": first, "last_port": last}]}),
        )
    };
    assert!(peer("192.168.1.5", 29500, 29500).is_ok());
    assert_eq!(
        peer("192.168.1.5", 0, 10),
        Err(JobSpecError::PortRange { first: 0, last: 10 })
    );
    assert_eq!(
        peer("192.168.1.5", 20, 10),
        Err(JobSpecError::PortRange { first: 20, last: 10 })
    );
    for bad in ["0.0.0.0", "255.255.255.255", "224.0.0.251"] {
        assert!(
            matches!(peer(bad, 1, 2), Err(JobSpecError::PeerAddress(_))),
            "{bad}"
        );
    }
    let many: Vec<Value> = (0..65)
        .map(|i| json!({"address": format!("10.0.0.{i}"), "first_port": 1, "last_port": 1}))
        .collect();
    assert_eq!(
        with("network", json!({"mode": "peers", "peers": many})),
        Err(JobSpecError::TooManyPeers(65))
    );
}

#[test]
fn messages_are_sentences_that_do_not_echo_huge_values() {
    let err = with("submitter", json!("x".repeat(10_000))).unwrap_err();
    let message = err.to_string();
    assert!(message.len() < 200, "{message}");
    assert!(message.starts_with("the submitter"));
}
