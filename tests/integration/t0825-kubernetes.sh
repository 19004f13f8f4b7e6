#!/usr/bin/env bash
# t0825-kubernetes: the manifests of docs/kubernetes are what they claim. yamllint finds no syntax
# error (when installed: bash .ci/setup installs it); every document is a Kubernetes object with a
# name; workloads' selectors match their pods' labels, every volume a container mounts is declared,
# the headless Service selects the mirror's pods, the kustomization names files that exist (and
# `kubectl kustomize`, where kubectl is installed, renders it, offline). Every hubmirror command line
# in them uses options the real binary's help lists for that command, and the mirror's configuration
# file passes `hubmirror config check` with the Secret's files in place.
. "$HM_SRC/tests/integration/lib.sh"
K="$HM_SRC/docs/kubernetes"
/usr/bin/python3 -c 'import yaml' 2>/dev/null || skip "python3-yaml is not installed (bash .ci/setup installs it)"
if command -v yamllint >/dev/null; then
	check "yamllint finds no error" yamllint -d '{extends: relaxed, rules: {line-length: {max: 160}}}' "$K"
fi
if command -v kubectl >/dev/null; then
	check "kubectl kustomize renders the kustomization offline" bash -c "kubectl kustomize '$K' >'$T/rendered.yaml' 2>'$T/kustomize.err' || { cat '$T/kustomize.err'; false; }"
fi
for cmd in serve agent mount status init; do "$HUBMIRROR" help "$cmd" >"$T/help-$cmd.txt" 2>&1; done
cat >"$T/check.py" <<'PY'
import glob, os, re, shlex, sys
import yaml
k, t = sys.argv[1], sys.argv[2]
bad = []
docs = []
for f in sorted(glob.glob(k + "/*.yaml")):
    for d in yaml.safe_load_all(open(f)):
        if d is None:
            continue
        where = "%s: %s %s" % (os.path.basename(f), d.get("kind"), (d.get("metadata") or {}).get("name"))
        if not d.get("apiVersion") or not d.get("kind"):
            bad.append(where + ": no apiVersion or kind")
        if d.get("kind") != "Kustomization" and not (d.get("metadata") or {}).get("name"):
            bad.append(where + ": no name")
        docs.append((where, f, d))
kust = [d for _, _, d in docs if d["kind"] == "Kustomization"]
for kz in kust:
    for r in kz.get("resources", []):
        if not os.path.exists(os.path.join(k, r)):
            bad.append("kustomization names a missing file " + r)

def pods(d):
    if d["kind"] == "Pod":
        return d["spec"], (d.get("metadata") or {}).get("labels", {})
    tpl = d["spec"]["template"]
    return tpl["spec"], tpl["metadata"].get("labels", {})

def hubmirror_lines(c):
    """Each hubmirror command line of a container, as a list of words."""
    argv = list(c.get("command", [])) + list(c.get("args", []))
    if argv[:2] == ["sh", "-c"]:
        out = []
        for line in argv[2].splitlines():
            m = re.search(r"\bhubmirror\s+\S+.*", line)
            if m:
                out.append(shlex.split(m.group(0).replace("exec ", "")))
        return out
    return [argv] if argv and argv[0] == "hubmirror" else []

labels_of = {}
for where, f, d in docs:
    if d["kind"] not in ("Pod", "StatefulSet", "DaemonSet", "Deployment"):
        continue
    spec, labels = pods(d)
    if d["kind"] != "Pod":
        want = d["spec"]["selector"]["matchLabels"]
        if any(labels.get(a) != b for a, b in want.items()):
            bad.append(where + ": selector %s does not match the pod labels %s" % (want, labels))
    labels_of[where] = labels
    declared = {v["name"] for v in spec.get("volumes", [])}
    declared |= {v["metadata"]["name"] for v in d["spec"].get("volumeClaimTemplates", [])} if d["kind"] == "StatefulSet" else set()
    for c in spec.get("initContainers", []) + spec["containers"]:
        for m in c.get("volumeMounts", []):
            if m["name"] not in declared:
                bad.append("%s: container %s mounts an undeclared volume %s" % (where, c["name"], m["name"]))
        for line in hubmirror_lines(c):
            sub = line[1]
            helpf = os.path.join(t, "help-%s.txt" % sub)
            if not os.path.exists(helpf):
                bad.append("%s: hubmirror %s is not checked here" % (where, sub)); continue
            known = set(re.findall(r"--[a-z][a-z0-9-]*", open(helpf).read()))
            for w in line[2:]:
                if w.startswith("--") and w.split("=")[0] not in known:
                    bad.append("%s: hubmirror %s has no option %s" % (where, sub, w))
# Only the agent's own pod holds the control socket (its folder, /run/hubmirror): a workload with it
# could stop the node's agent or mount anywhere. And the local endpoint is bound to loopback.
for where, f, d in docs:
    if d["kind"] not in ("Pod", "StatefulSet", "DaemonSet", "Deployment"):
        continue
    spec, _ = pods(d)
    cs = spec.get("initContainers", []) + spec["containers"]
    lines = [l for c in cs for l in hubmirror_lines(c)]
    runs_agent = any(l[1] == "agent" for l in lines)
    for v in spec.get("volumes", []):
        hp = (v.get("hostPath") or {}).get("path", "").rstrip("/")
        if not runs_agent and (hp == "/run/hubmirror" or hp.startswith("/run/hubmirror/") or hp in ("/run", "/")):
            bad.append("%s: hands a workload the agent's control socket (hostPath %s)" % (where, hp))
    for l in lines:
        if l[1] == "agent" and "--http" in l:
            v = l[l.index("--http") + 1]
            if not (v.startswith("127.") or v.startswith("[::1]")):
                bad.append("%s: the local endpoint is bound to %s, not loopback" % (where, v))
for where, f, d in docs:
    if d["kind"] == "Service":
        sel = d["spec"]["selector"]
        if not any(all(l.get(a) == b for a, b in sel.items()) for l in labels_of.values()):
            bad.append(where + ": its selector %s matches no pod" % sel)
for b in bad:
    print("# " + b)
sys.exit(1 if bad else 0)
PY
check "the objects, their selectors, volumes and commands hold together" /usr/bin/python3 "$T/check.py" "$K" "$T"
# the check can fail: an option the agent does not have, a volume nobody declared
mkdir -p "$T/broken" && cp "$K"/*.yaml "$T/broken/"
sed -i 's/- --preheat$/- --preheat-all/; s/name: fuse, mountPath/name: fuse2, mountPath/' "$T/broken/agent.yaml"
/usr/bin/python3 "$T/check.py" "$T/broken" "$T" >"$T/broken.out" 2>&1
check "... and it fails on a manifest with an unknown option and an undeclared volume" \
	bash -c "grep -q 'has no option --preheat-all' '$T/broken.out' && grep -q 'undeclared volume fuse2' '$T/broken.out'"
# ... and on a workload given the control socket, and an endpoint open to the network
sed -i 's/- 127.0.0.1:8089$/- 0.0.0.0:8089/' "$T/broken/agent.yaml"
cat >>"$T/broken/workload-example.yaml" <<'YAML'
---
apiVersion: v1
kind: Pod
metadata: { name: sneaky, namespace: default }
spec:
  containers:
    - name: c
      image: x
      volumeMounts: [{ name: run, mountPath: /run/hubmirror }]
  volumes:
    - name: run
      hostPath: { path: /run/hubmirror, type: Directory }
YAML
/usr/bin/python3 "$T/check.py" "$T/broken" "$T" >"$T/broken.out" 2>&1
check "... and on a workload with the control socket and an endpoint bound to every address" \
	bash -c "grep -q 'Pod sneaky: hands a workload the agent.s control socket' '$T/broken.out' && grep -q 'bound to 0.0.0.0:8089, not loopback' '$T/broken.out'"
# The ConfigMap's configuration file, with the Secret's files and the data directory under $T.
check "the mirror's configuration passes hubmirror config check" /usr/bin/python3 - "$K/mirror.yaml" "$T" <<'PY'
import os, sys, subprocess
import yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
t = sys.argv[2]
conf = next(d for d in docs if d["kind"] == "ConfigMap")["data"]["hubmirror.conf"]
secret = next(d for d in docs if d["kind"] == "Secret")["stringData"]
os.makedirs(t + "/secrets", exist_ok=True)
for name, value in secret.items():
    p = "%s/secrets/%s" % (t, name)
    with open(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(value)
conf = conf.replace("/etc/hubmirror/secrets", t + "/secrets").replace("/var/lib/hubmirror", t + "/k8sdata")
open(t + "/k8s.conf", "w").write(conf)
# the init container's first step: a new volume gets an empty mirror (serve refuses a bare folder)
subprocess.run([os.environ["HUBMIRROR"], "init", "--data", t + "/k8sdata"], check=True, stdout=subprocess.DEVNULL)
r = subprocess.run([os.environ["HUBMIRROR"], "config", "check", t + "/k8s.conf"], capture_output=True, text=True)
print("".join("# " + l + "\n" for l in (r.stdout + r.stderr).splitlines()), end="")
sys.exit(r.returncode)
PY
finish
