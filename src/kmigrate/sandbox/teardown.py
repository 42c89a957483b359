"""`kmigrate sandbox down`: stopping the brokers, controllers, Schema Registries and
ZooKeeper nodes of one sandbox (only those, found by the files their command lines
name, recorded or not), waiting until each is gone, and recording them as stopped."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from kmigrate.errors import SandboxError
from kmigrate.sandbox import process, schema_registry
from kmigrate.sandbox.clusters_yaml import write_clusters_yaml
from kmigrate.sandbox.state import SandboxState, load_state


def down_targets(
    directory: Path, clusters: Sequence[str] | None, ensembles: Sequence[str] | None
) -> tuple[SandboxState, list[str], list[str]]:
    """The sandbox in ``directory`` and the clusters and ensembles `down` would stop (all
    with neither given); a SandboxError, before anything is touched, when there is no
    sandbox there or it has no such cluster or ensemble."""
    directory = directory.resolve()
    state = load_state(directory)
    if not state.clusters and not state.ensembles:
        raise SandboxError(f"no sandbox in {directory}: nothing to stop")
    everything = clusters is None and ensembles is None
    names = sorted(state.clusters) if everything else list(clusters or ())
    ens = sorted(state.ensembles) if everything else list(ensembles or ())
    unknown = [n for n in names if n not in state.clusters]
    unknown += [f"ZooKeeper ensemble {n}" for n in ens if n not in state.ensembles]
    if unknown:
        raise SandboxError(f"no sandbox cluster named {', '.join(unknown)} in {directory}")
    return state, names, ens


@dataclass(frozen=True)
class Stopped:
    """A process `down` stopped: what it was (broker, controller, Schema Registry,
    ZooKeeper node), the file that named it, its pid."""

    kind: str
    path: Path
    pid: int


KINDS = {
    "server.properties": "broker",
    "controller.properties": "controller",
    schema_registry.CONFIG_NAME: "Schema Registry",
    "zoo.cfg": "ZooKeeper node",
}


def down(
    directory: Path,
    clusters: Sequence[str] | None = None,
    *,
    purge: bool = False,
    grace: float = 20.0,
    ensembles: Sequence[str] | None = None,
) -> list[Stopped]:
    """Stop the brokers, registries, controllers and ZooKeeper nodes of this sandbox
    (only those), each recorded in sandbox.json or proven ours by its command line (a
    pid an interrupted `up` never recorded; a state file another run rewrote); waits
    until each is gone (SIGKILL after ``grace``). ``purge`` also deletes their data.
    With neither ``clusters`` nor ``ensembles``: everything; brokers stop before the
    controllers and ensembles they use. Returns what it stopped."""
    directory = directory.resolve()
    found = load_state(directory)
    if not found.clusters and not found.ensembles:
        return []  # nothing to stop; nothing written
    state, names, ens = down_targets(directory, clusters, ensembles)
    # Found by command line: every process sandbox.json records names its file there
    # too, and so does one it lost.
    brokers: dict[int, Path] = {}
    controllers: dict[int, Path] = {}
    nodes: dict[int, Path] = {}
    for name in names:
        folder = state.cluster_dir(name)
        brokers.update(
            process.processes_naming(folder, ["server.properties", schema_registry.CONFIG_NAME])
        )
        controllers.update(process.processes_naming(folder, ["controller.properties"]))
    for name in ens:
        nodes.update(process.processes_naming(state.ensemble_dir(name), ["zoo.cfg"]))
    stopped = [
        Stopped(KINDS.get(paths[pid].name, "process"), paths[pid], pid)
        for paths in (brokers, controllers, nodes)
        for pid in process.stop_processes(paths, grace=grace)
    ]
    for name in names:
        cluster = state.clusters[name]
        for broker in cluster.brokers:
            cluster = cluster.with_broker(replace(broker, pid=None))
        for node in cluster.controllers:
            cluster = cluster.with_controller(replace(node, pid=None))
        if cluster.schema_registry is not None:
            cluster = replace(cluster, schema_registry=replace(cluster.schema_registry, pid=None))
        state = state.with_cluster(cluster)
    for name in ens:
        ensemble = state.ensembles[name]
        state = state.with_ensemble(
            replace(ensemble, nodes=tuple(replace(n, pid=None) for n in ensemble.nodes))
        )
    if purge:
        for name in names:
            shutil.rmtree(state.cluster_dir(name), ignore_errors=True)
        for name in ens:
            shutil.rmtree(state.ensemble_dir(name), ignore_errors=True)
        state = SandboxState(
            directory,
            {n: c for n, c in state.clusters.items() if n not in names},
            {n: e for n, e in state.ensembles.items() if n not in ens},
        )
    state.save()
    write_clusters_yaml(state)
    return stopped
