// SPDX-License-Identifier: GPL-3.0-or-later
use super::*;

fn config() -> RuntimeConfig {
    RuntimeConfig {
        name: "torch".into(),
        python: "/opt/venv/bin/python".into(),
    }
}

#[test]
fn parses_the_last_line() {
    let stdout = "noise from an import\n{\"version\": \"3.11.2\", \"prefix\": \"/opt/venv\", \
                  \"base_prefix\": \"/usr\", \"executable\": \"/opt/venv/bin/python\", \
                  \"torch\": \"2.5.1+cu124\", \"cuda\": \"12.4\"}\n\n";
    let report = parse_report(&config(), stdout).unwrap();
    assert_eq!(report.version, "3.11.2");
    assert_eq!(report.torch.as_deref(), Some("2.5.1+cu124"));
    assert_eq!(report.cuda.as_deref(), Some("12.4"));
    assert_eq!(report.prefix, Path::new("/opt/venv"));
}

#[test]
fn torch_and_cuda_may_be_null() {
    let stdout = r#"{"version": "3.11.2", "prefix": "/usr", "base_prefix": "/usr",
                     "executable": "/usr/bin/python3", "torch": null, "cuda": null}"#
        .replace('\n', " ");
    let report = parse_report(&config(), &stdout).unwrap();
    assert_eq!((report.torch, report.cuda), (None, None));
}

#[test]
fn refuses_bad_output() {
    for stdout in [
        "",
        "not json",
        r#"{"version": "3"}"#,
        r#"{"version": "3", "prefix": "rel",
        "base_prefix": "/usr", "executable": "x", "torch": null, "cuda": null}"#,
    ] {
        let err = parse_report(&config(), &stdout.replace('\n', " ")).unwrap_err();
        assert!(matches!(err, RuntimeError::BadOutput { .. }), "{stdout}");
        assert!(err.to_string().contains("\"torch\""));
    }
}

#[test]
fn binds_leave_out_root_and_usr() {
    let venv = binds(
        Path::new("/opt/venv"),
        Path::new("/usr"),
        Some(Path::new("/usr/bin")),
    );
    assert_eq!(venv, [PathBuf::from("/opt/venv")]);
    assert!(binds(Path::new("/usr"), Path::new("/usr"), Some(Path::new("/usr/bin"))).is_empty());
    assert!(binds(Path::new("/"), Path::new("/"), Some(Path::new("/bin"))).is_empty());
    assert_eq!(
        binds(Path::new("/usr/local"), Path::new("/usr"), None),
        Vec::<PathBuf>::new()
    );
}

#[test]
fn binds_keep_outer_directories_once() {
    let conda_env = binds(
        Path::new("/opt/conda/envs/t"),
        Path::new("/opt/conda"),
        Some(Path::new("/opt/conda/bin")),
    );
    assert_eq!(conda_env, [PathBuf::from("/opt/conda")]);
    let elsewhere = binds(
        Path::new("/opt/venv"),
        Path::new("/opt/py311"),
        Some(Path::new("/srv/py/bin")),
    );
    assert_eq!(
        elsewhere,
        ["/opt/venv", "/opt/py311", "/srv/py/bin"].map(PathBuf::from)
    );
}

#[test]
fn config_rejects_unknown_fields() {
    let ok: RuntimeConfig =
        serde_json::from_str(r#"{"name": "torch", "python": "/opt/venv/bin/python"}"#).unwrap();
    assert_eq!(ok, config());
    assert!(serde_json::from_str::<RuntimeConfig>(r#"{"name": "t", "python": "/x", "extra": 1}"#).is_err());
}

#[tokio::test]
async fn probes_the_system_python() {
    let python = default_runtime();
    if !python.python.exists() {
        eprintln!("skipped: no {}", python.python.display());
        return;
    }
    let runtime = probe(&python, Duration::from_secs(30)).await.unwrap();
    assert_eq!(runtime.name, "system");
    assert!(runtime.python_version.starts_with("3."), "{runtime:?}");
    assert!(runtime.binds.is_empty(), "{runtime:?}");
}

#[tokio::test]
async fn missing_interpreter_and_timeout_are_reported() {
    let missing = RuntimeConfig {
        name: "gone".into(),
        python: "/nonexistent/python".into(),
    };
    let err = probe(&missing, Duration::from_secs(5)).await.unwrap_err();
    assert!(matches!(err, RuntimeError::Start { .. }), "{err}");
    let tmp = tempfile::tempdir().unwrap();
    let fake = |name: &str, body: &str| {
        let path = tmp.path().join(name);
        crate::test_support::write_executable(&path, &format!("#!/bin/sh\n{body}\n"));
        RuntimeConfig {
            name: name.into(),
            python: path,
        }
    };
    let err = probe(&fake("slow", "exec sleep 10"), Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(matches!(err, RuntimeError::Timeout { .. }), "{err}");
    let err = probe(&fake("chatty", "echo hello"), Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(matches!(err, RuntimeError::BadOutput { .. }), "{err}");
    let err = probe(&fake("failing", "exit 3"), Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("exit status: 3"), "{err}");
}
