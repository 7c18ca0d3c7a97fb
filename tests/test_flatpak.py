# SPDX-License-Identifier: GPL-3.0-or-later
"""The Flatpak of the app and tray (flatpak/, flatpak/README.md).

flatpak-builder cannot run on the CI machines, so this checks what it would be given: the
manifest (ids, runtime, exactly the permissions flatpak/README.md justifies, the meson
options), that flatpak/cargo-sources.py turns today's Cargo.lock into offline sources for
every crate, and that meson with -Ddaemon=false installs the app and its data files only, under
names Flatpak exports. Where flatpak-builder is installed, it parses the manifest too.
"""

import configparser
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import BUS_NAME, REPO

APP_ID = "org.partagpu.PartaGPU"
FLATPAK = REPO / "flatpak"
MANIFEST = FLATPAK / f"{APP_ID}.json"
GENERATOR = FLATPAK / "cargo-sources.py"
MODULE = "partagpu"
# The registry's real download template is this machine's cargo's (the generator reads it
# from cargo's cache); the tests use a placeholder host.
TEST_DL = "https://example.invalid/crates"

# Each one is explained in flatpak/README.md; a change here needs a change there.
EXPECTED_FINISH_ARGS = [
    "--share=ipc",
    "--socket=fallback-x11",
    "--socket=wayland",
    "--device=dri",
    f"--system-talk-name={BUS_NAME}",
    "--talk-name=org.kde.StatusNotifierWatcher",
    "--filesystem=xdg-download/PartaGPU:create",
]
# Holes that would make the sandbox pointless for this app: it talks to one system service
# and needs neither the network (the service does the networking) nor the user's files.
FORBIDDEN_FINISH_ARGS = [
    "--socket=system-bus", "--socket=session-bus", "--share=network", "--device=all",
    "--filesystem=host", "--filesystem=home", "--filesystem=host-os", "--talk-name=org.kde.*",
    "--own-name=org.kde.*",
]


def manifest():
    return json.loads(MANIFEST.read_text())


def app_module():
    return manifest()["modules"][-1]


def load_generator():
    # The file name has a dash (as the generator Flatpak's tools ship is named), so it is
    # loaded by path rather than imported.
    spec = importlib.util.spec_from_file_location("cargo_sources", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# (1) The manifest.

def test_manifest_names_the_app_and_the_gnome_runtime():
    data = manifest()
    assert data["id"] == APP_ID
    assert data["runtime"] == "org.gnome.Platform" and data["sdk"] == "org.gnome.Sdk"
    # GNOME 43 is the first with GTK 4.8 and libadwaita 1.2, what relm4's gnome_43 needs.
    assert int(data["runtime-version"]) >= 43
    assert "org.freedesktop.Sdk.Extension.rust-stable" in data["sdk-extensions"]
    assert data["command"] == "partagpu"


def test_app_id_matches_the_desktop_file_and_the_metainfo():
    desktop = REPO / "data" / f"{APP_ID}.desktop"
    assert desktop.exists(), f"the launcher must be named after the app id: {desktop}"
    exec_line = re.search(r"^Exec=(\S+)", desktop.read_text(), re.MULTILINE)
    assert exec_line and exec_line[1] == manifest()["command"]
    component = ET.parse(REPO / "data" / f"{APP_ID}.metainfo.xml").getroot()
    assert component.findtext("id") == APP_ID
    for launchable in component.findall("launchable"):
        assert launchable.text == f"{APP_ID}.desktop"


def test_finish_args_are_exactly_the_documented_ones():
    finish_args = manifest()["finish-args"]
    assert len(finish_args) == len(set(finish_args)), "a permission is listed twice"
    assert sorted(finish_args) == sorted(EXPECTED_FINISH_ARGS)
    assert not set(finish_args) & set(FORBIDDEN_FINISH_ARGS)
    readme = (FLATPAK / "README.md").read_text()
    for argument in finish_args:
        assert f"`{argument}`" in readme, f"flatpak/README.md does not explain {argument}"


def test_the_bus_name_is_the_one_the_service_owns():
    # The bus policy is named after the name the service owns; a rename must reach the Flatpak.
    assert (REPO / "dbus" / f"{BUS_NAME}.conf").exists()
    assert f'own="{BUS_NAME}"' in (REPO / "dbus" / f"{BUS_NAME}.conf").read_text()


def test_cargo_runs_offline_in_the_module_build_directory():
    module = app_module()
    assert module["name"] == MODULE and module["buildsystem"] == "meson"
    options = module["build-options"]
    assert "/usr/lib/sdk/rust-stable/bin" in options["append-path"].split(":")
    # flatpak-builder builds module NAME in /run/build/NAME: the sources' cargo/ lands there.
    assert options["env"]["CARGO_HOME"] == f"/run/build/{MODULE}/cargo"
    assert options["env"]["CARGO_NET_OFFLINE"] == "true"
    sources = module["sources"]
    assert "cargo-sources.json" in sources
    (tree,) = [source for source in sources if isinstance(source, dict) and source["type"] == "dir"]
    assert (FLATPAK / tree["path"]).resolve() == REPO
    # Gigabytes of build output must not be copied into the build.
    assert "target" in tree["skip"]


# (2) The offline cargo sources.

def registry_packages():
    lock = tomllib.loads((REPO / "Cargo.lock").read_text())
    return [package for package in lock["package"] if package.get("source", "").startswith("registry+")]


def generated_sources(output):
    result = subprocess.run([sys.executable, GENERATOR, "--dl", TEST_DL, "--output", output],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return json.loads(output.read_text())


def test_every_locked_crate_is_fetched_with_its_checksum(tmp_path):
    sources = generated_sources(tmp_path / "cargo-sources.json")
    archives = {source["dest"]: source for source in sources if source["type"] == "archive"}
    checksums = {(source["dest"], source["dest-filename"]): json.loads(source["contents"])
                 for source in sources if source["type"] == "inline" and source["dest"] != "cargo"}
    packages = registry_packages()
    assert len(archives) == len(packages)
    for package in packages:
        dest = f"cargo/vendor/{package['name']}-{package['version']}"
        assert archives[dest]["sha256"] == package["checksum"], dest
        assert archives[dest]["url"] == f"{TEST_DL}/{package['name']}/{package['version']}/download"
        assert checksums[(dest, ".cargo-checksum.json")] == {"package": package["checksum"], "files": {}}
    (config,) = [source for source in sources if source["dest"] == "cargo"]
    assert config["dest-filename"] == "config.toml"
    cargo_config = tomllib.loads(config["contents"])
    assert cargo_config["source"]["crates-io"]["replace-with"] == "vendored-sources"
    assert cargo_config["source"]["vendored-sources"]["directory"] == "cargo/vendor"


def test_the_generated_sources_are_not_committed():
    # They name the host this machine's cargo downloads from; each builder makes its own.
    tracked = subprocess.run(["git", "ls-files", "flatpak"], cwd=REPO, capture_output=True, text=True).stdout
    assert "cargo-sources.json" not in tracked.split()
    ignored = subprocess.run(["git", "check-ignore", "-q", "flatpak/cargo-sources.json"], cwd=REPO)
    assert ignored.returncode == 0


def test_generator_refuses_git_dependencies(tmp_path):
    lock = tmp_path / "Cargo.lock"
    lock.write_text('version = 4\n\n[[package]]\nname = "forked"\nversion = "0.1.0"\n'
                    'source = "git+https://example.invalid/forked#0123abcd"\n')
    result = subprocess.run([sys.executable, GENERATOR, "--lock", lock, "--output", tmp_path / "out.json",
                             "--dl", TEST_DL],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert "forked 0.1.0" in result.stderr and "git+" in result.stderr
    assert not (tmp_path / "out.json").exists()


def test_generator_refuses_a_second_registry(tmp_path):
    lock = tmp_path / "Cargo.lock"
    lock.write_text('version = 4\n\n'
                    '[[package]]\nname = "one"\nversion = "1.0.0"\nsource = "registry+https://a.invalid/index"\n'
                    f'checksum = "{"0" * 64}"\n\n'
                    '[[package]]\nname = "two"\nversion = "1.0.0"\nsource = "registry+https://b.invalid/index"\n'
                    f'checksum = "{"1" * 64}"\n')
    result = subprocess.run([sys.executable, GENERATOR, "--lock", lock, "--output", tmp_path / "out.json",
                             "--dl", TEST_DL], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert "two 1.0.0" in result.stderr
    assert not (tmp_path / "out.json").exists()


def test_generator_fills_every_download_template_marker():
    generator = load_generator()
    crates = [{"name": "ab", "version": "1.0.0", "checksum": "0" * 64},
              {"name": "Serde-json", "version": "0.11.1+wasi", "checksum": "1" * 64}]
    assert generator.crate_url(TEST_DL, crates[0]) == f"{TEST_DL}/ab/1.0.0/download"
    assert generator.crate_url("https://x.invalid/{prefix}/{lowerprefix}/{crate}-{version}.crate", crates[1]) == \
        "https://x.invalid/Se/rd/se/rd/Serde-json-0.11.1+wasi.crate"
    assert generator.crate_url("https://x.invalid/{sha256-checksum}", crates[0]) == f"https://x.invalid/{'0' * 64}"
    assert generator.crate_url("https://x.invalid/{prefix}/{crate}", crates[0]) == "https://x.invalid/2/ab"


# (3) The meson options.

def test_meson_builds_the_app_only():
    config_opts = app_module()["config-opts"]
    assert "-Ddaemon=false" in config_opts
    # The tests need the host's bus and GPUs; the Flatpak build runs none.
    assert "-Dcargo_tests=false" in config_opts
    # meson's own default is debug (and older flatpak-builders pass no build type): cargo's
    # dev profile, a binary ten times the size.
    assert "--buildtype=release" in config_opts
    declared = re.findall(r"option\('([^']+)'", (REPO / "meson_options.txt").read_text())
    for option in config_opts:
        if option.startswith("-D"):
            name = re.match(r"-D([^=]+)=", option)[1]
            assert name in declared, f"{option}: no such option in meson_options.txt"


# (4) flatpak-builder's own reading of the manifest, where it is installed.

@pytest.mark.skipif(shutil.which("flatpak-builder") is None, reason="flatpak-builder is not installed")
def test_flatpak_builder_reads_the_manifest_as_written(tmp_path):
    # A copy beside freshly generated sources, as a builder has them.
    shutil.copy(MANIFEST, tmp_path)
    generated = generated_sources(tmp_path / "cargo-sources.json")
    result = subprocess.run(["flatpak-builder", "--show-manifest", tmp_path / MANIFEST.name],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    # It prints what it understood, cargo-sources.json expanded in place: a misspelled or
    # misplaced key would be missing from it.
    expected = manifest()
    module = expected["modules"][-1]
    sources = []
    for source in module["sources"]:
        sources += generated if source == "cargo-sources.json" else [source]
    module["sources"] = sources
    assert json.loads(result.stdout) == expected


# (5) What meson -Ddaemon=false installs, under the Flatpak's prefix.

@pytest.fixture(scope="module")
def installed():
    """meson setup + install with the manifest's options into a staging root.

    cargo is left out: a release build of the workspace takes minutes, and pointing meson
    at target/ would rebuild the target/debug/partagpu other tests are running (the
    Flatpak's LOCALEDIR differs). The binary cargo built already takes the place of
    cargo-build's output instead (a hard link, so the build directory sits under target/);
    everything else meson builds and installs for real.
    """
    binary = REPO / "target" / "debug" / "partagpu"
    assert binary.exists(), f"{binary} is missing: build first (cargo build)"
    (REPO / "target").mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="flatpak-meson-", dir=REPO / "target"))
    build, root = work / "build", work / "root"
    try:
        # As flatpak-builder runs it (it adds --libdir=lib).
        setup = ["meson", "setup", build, REPO, "--prefix=/app", "--libdir=lib", *app_module()["config-opts"]]
        run(setup, "meson setup -Ddaemon=false")
        targets = json.loads(run(["meson", "introspect", "--targets", build], "meson introspect").stdout)
        cargo = [target for target in targets if target["name"] == "cargo-build"]
        assert len(cargo) == 1, "src/meson.build has no single cargo-build target"
        # What `ninja` alone would build, less cargo (run targets such as the .pot are not).
        others = [output for target in targets
                  if target["name"] != "cargo-build" and target["type"] != "run" and target["build_by_default"]
                  for output in target["filename"]]
        if others:
            run(["ninja", "-C", build, *[os.path.relpath(output, build) for output in others]], "ninja")
        for output in cargo[0]["filename"]:
            os.link(binary, output)
        run(["meson", "install", "-C", build, "--no-rebuild", "--quiet", "--destdir", root], "meson install")
        yield {"cargo": cargo[0], "app": root / "app"}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(argv, what):
    result = subprocess.run([str(arg) for arg in argv], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"{what} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def test_cargo_builds_only_the_app_binary(installed):
    # -Ddaemon=false: no partagpud, no partagpuctl in the one cargo build.
    assert [Path(name).name for name in installed["cargo"]["filename"]] == ["partagpu"]
    assert installed["cargo"]["install_filename"] == ["/app/bin/partagpu"]


def test_install_has_the_app_and_its_data_files(installed):
    app = installed["app"]
    for path in ["bin/partagpu",
                 f"share/applications/{APP_ID}.desktop",
                 f"share/metainfo/{APP_ID}.metainfo.xml",
                 f"share/icons/hicolor/scalable/apps/{APP_ID}.svg",
                 f"share/icons/hicolor/symbolic/apps/{APP_ID}-symbolic.svg",
                 f"share/glib-2.0/schemas/{APP_ID}.gschema.xml",
                 "share/locale/fr/LC_MESSAGES/partagpu.mo"]:
        assert (app / path).is_file(), f"/app/{path} is not installed"
    assert sorted(path.name for path in (app / "bin").iterdir()) == ["partagpu"]


def test_install_has_nothing_of_the_service(installed):
    # A Flatpak cannot ship a system service: its unit, bus policy, polkit actions and
    # binaries come from the .deb only.
    app = installed["app"]
    for path in ["libexec", "lib/systemd", "lib/sysusers.d", "lib/tmpfiles.d", "share/dbus-1/system.d",
                 "share/dbus-1/system-services", "share/dbus-1/interfaces", "share/polkit-1", "etc/dbus-1"]:
        assert not (app / path).exists(), f"/app/{path} is installed with -Ddaemon=false"
    leftovers = [str(path.relative_to(app)) for path in app.rglob("*") if "partagpud" in path.name]
    assert not leftovers


# Flatpak exports only files named after the app id from share/applications, share/icons,
# share/metainfo and share/dbus-1/services; anything else stays inside the sandbox, where
# the desktop (and the tray host drawing our icon) cannot see it.
EXPORTED = ["share/applications", "share/icons", "share/metainfo", "share/dbus-1/services"]


def unexported(app: Path):
    return {str(path.relative_to(app)) for folder in EXPORTED if (app / folder).is_dir()
            for path in (app / folder).rglob("*")
            if path.is_file() and not path.name.startswith(APP_ID)
            and path.name != "index.theme" and not path.name.startswith("icon-theme.cache")}


def test_every_icon_and_launcher_is_exported(installed):
    # The tray host, outside the sandbox, finds the status icons only if Flatpak exports them.
    assert not unexported(installed["app"])


@pytest.mark.skipif(shutil.which("flatpak") is None, reason="flatpak is not installed")
def test_flatpak_accepts_the_permissions_and_exports_the_launcher(installed, tmp_path):
    # What flatpak-builder's last step does with the installed tree: flatpak build-finish
    # checks each permission (it refuses an invalid bus name) and exports the desktop files.
    data = manifest()
    arch = subprocess.run(["flatpak", "--default-arch"], capture_output=True, text=True).stdout.strip()
    (tmp_path / "files").symlink_to(installed["app"])
    (tmp_path / "metadata").write_text(
        f"[Application]\nname={APP_ID}\n"
        f"runtime={data['runtime']}/{arch}/{data['runtime-version']}\n"
        f"sdk={data['sdk']}/{arch}/{data['runtime-version']}\n")
    result = subprocess.run(["flatpak", "build-finish", tmp_path, f"--command={data['command']}",
                             *data["finish-args"]], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    exported = {str(path.relative_to(tmp_path / "export")) for path in (tmp_path / "export").rglob("*")
                if path.is_file()}
    assert exported == {f"share/applications/{APP_ID}.desktop", f"share/metainfo/{APP_ID}.metainfo.xml",
                        f"share/icons/hicolor/scalable/apps/{APP_ID}.svg",
                        f"share/icons/hicolor/symbolic/apps/{APP_ID}-symbolic.svg"} | {
                        f"share/icons/hicolor/symbolic/apps/{APP_ID}-{state}-symbolic.svg"
                        for state in ("sharing", "paused", "off", "busy")}
    assert not re.findall(r"Not exporting (\S+),", result.stdout)
    metadata = configparser.ConfigParser(interpolation=None)
    metadata.optionxform = str
    metadata.read_string((tmp_path / "metadata").read_text())
    assert dict(metadata["System Bus Policy"]) == {BUS_NAME: "talk"}
    assert dict(metadata["Session Bus Policy"]) == {"org.kde.StatusNotifierWatcher": "talk"}
    assert metadata["Context"]["filesystems"] == "xdg-download/PartaGPU:create;"
