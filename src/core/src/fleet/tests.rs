// SPDX-License-Identifier: GPL-3.0-or-later
use super::*;

const GIB: u64 = 1 << 30;

fn sample() -> NodeState {
    NodeState {
        name: "B12-03".into(),
        version: "0.1.0".into(),
        sharing: SharingState::Sharing,
        limits: Limits::default_for(16 * GIB),
        cpu: CpuInfo {
            model: "AMD Ryzen 7".into(),
            cores: 16,
            usage_percent: 12.5,
        },
        memory: MemoryInfo {
            total_bytes: 16 * GIB,
            available_bytes: 9 * GIB,
        },
        load: LoadAverage {
            one: 0.5,
            five: 0.25,
            fifteen: 0.1,
        },
        gpus: vec![GpuInfo {
            index: 0,
            name: "NVIDIA RTX A4000".into(),
            uuid: "GPU-0123".into(),
            memory_total_bytes: 16 * GIB,
            memory_used_bytes: GIB,
            utilization_percent: 40,
        }],
        gpu_probe: GpuProbeStatus::Available,
        jobs_running: 2,
        runtimes: vec![
            RuntimeInfo {
                name: "torch".into(),
                python: "3.12.3".into(),
                torch: Some("2.5.1+cu121".into()),
                cuda: Some("12.1".into()),
            },
            RuntimeInfo {
                name: "system".into(),
                python: "3.12.3".into(),
                torch: None,
                cuda: None,
            },
        ],
    }
}

fn request(state: &NodeState) -> Vec<u8> {
    serde_json::to_vec(&StateRequest {
        op: STATE_OP.into(),
        id: 7,
        state: state.clone(),
    })
    .unwrap()
}

#[test]
fn a_state_round_trips_through_its_request() {
    let state = sample();
    let parsed = parse_request(&request(&state)).unwrap();
    assert_eq!((parsed.id, parsed.state), (7, state.clone()));
    let mut busy = state;
    busy.cpu.usage_percent = 101.0;
    assert_eq!(
        parse_request(&request(&busy)),
        Err(StateError::Invalid("cpu")),
        "parsing checks too"
    );
}

#[test]
fn out_of_bounds_states_are_refused_by_field() {
    type Change = Box<dyn Fn(&mut NodeState)>;
    let cases: Vec<(&str, Change)> = vec![
        ("name", Box::new(|s| s.name = " padded ".into())),
        ("name", Box::new(|s| s.name = "x".repeat(65))),
        ("version", Box::new(|s| s.version = String::new())),
        ("version", Box::new(|s| s.version = "1\u{1b}[2J".into())),
        ("limits", Box::new(|s| s.limits.ram_bytes = 17 * GIB)),
        ("limits", Box::new(|s| s.limits.cpu_percent = 101)),
        ("cpu", Box::new(|s| s.cpu.usage_percent = f64::NAN)),
        ("cpu", Box::new(|s| s.cpu.usage_percent = 100.5)),
        ("memory", Box::new(|s| s.memory.available_bytes = 17 * GIB)),
        ("load", Box::new(|s| s.load.five = -1.0)),
        ("gpus", Box::new(|s| s.gpus[0].utilization_percent = 101)),
        ("gpus", Box::new(|s| s.gpus[0].name = "g".repeat(129))),
        (
            "gpus",
            Box::new(|s| s.gpus = vec![s.gpus[0].clone(); MAX_GPUS + 1]),
        ),
        (
            "gpu_probe",
            Box::new(|s| s.gpu_probe = GpuProbeStatus::Unavailable("\n".into())),
        ),
        (
            "jobs_running",
            Box::new(|s| s.jobs_running = MAX_JOBS_RUNNING + 1),
        ),
        (
            "runtimes",
            Box::new(|s| s.runtimes = vec![s.runtimes[0].clone(); MAX_RUNTIMES + 1]),
        ),
        ("runtimes", Box::new(|s| s.runtimes[0].name = String::new())),
        ("runtimes", Box::new(|s| s.runtimes[0].name = "Torch".into())),
        ("runtimes", Box::new(|s| s.runtimes[0].name = "-torch".into())),
        ("runtimes", Box::new(|s| s.runtimes[0].name = "torch 2".into())),
        ("runtimes", Box::new(|s| s.runtimes[0].name = "t".repeat(33))),
        ("runtimes", Box::new(|s| s.runtimes[0].name = "tørch".into())),
        ("runtimes", Box::new(|s| s.runtimes[0].python = String::new())),
        ("runtimes", Box::new(|s| s.runtimes[0].python = "3".repeat(65))),
        ("runtimes", Box::new(|s| s.runtimes[0].python = "3.12\n".into())),
        (
            "runtimes",
            Box::new(|s| s.runtimes[0].torch = Some("2.5.1\u{1b}[2J".into())),
        ),
        (
            "runtimes",
            Box::new(|s| s.runtimes[0].torch = Some("2.5.1-é".into())),
        ),
        (
            "runtimes",
            Box::new(|s| s.runtimes[0].torch = Some(String::new())),
        ),
        (
            "runtimes",
            Box::new(|s| s.runtimes[1].cuda = Some("1".repeat(65))),
        ),
    ];
    for (field, change) in cases {
        let mut state = sample();
        change(&mut state);
        assert_eq!(state.check(), Err(StateError::Invalid(field)), "{field}");
    }
}

#[test]
fn the_job_and_runtime_bounds_are_inclusive() {
    let mut state = sample();
    state.jobs_running = MAX_JOBS_RUNNING;
    state.runtimes = (0..MAX_RUNTIMES)
        .map(|i| RuntimeInfo {
            name: format!("{i}{}", "a._-".repeat(10))[..MAX_RUNTIME_NAME_CHARS].to_owned(),
            python: "3".repeat(MAX_VERSION_CHARS),
            torch: Some(" ~!".repeat(21)),
            cuda: None,
        })
        .collect();
    assert_eq!(state.check(), Ok(()));
    state.runtimes.clear();
    state.jobs_running = 0;
    assert_eq!(state.check(), Ok(()), "no runtime, no job");
}

#[test]
fn a_state_of_an_older_member_reads_as_no_job_and_no_runtime() {
    let mut value = serde_json::to_value(sample()).unwrap();
    let object = value.as_object_mut().unwrap();
    object.remove("jobs_running");
    object.remove("runtimes");
    let state: NodeState = serde_json::from_value(value).unwrap();
    assert_eq!((state.jobs_running, state.runtimes), (0, Vec::new()));
    let runtime = &serde_json::to_value(sample()).unwrap()["runtimes"][1];
    assert_eq!(
        runtime,
        &serde_json::json!({"name": "system", "python": "3.12.3", "torch": null, "cuda": null}),
        "the wire form of §7.5"
    );
}

#[test]
fn other_requests_and_garbage_are_told_apart() {
    assert_eq!(
        parse_request(br#"{"op":"job.submit","id":3}"#),
        Err(StateError::UnknownRequest)
    );
    assert_eq!(request_id(br#"{"op":"job.submit","id":3}"#), Some(3));
    assert_eq!(parse_request(b"{"), Err(StateError::Malformed));
    assert_eq!(
        parse_request(br#"{"op":"fleet.state","id":1,"state":{}}"#),
        Err(StateError::Malformed)
    );
    assert_eq!(request_id(b"[]"), None);
    let error = StateError::UnknownRequest.to_string();
    assert_eq!(error, "unknown-request", "the Python peer matches this string");
}
