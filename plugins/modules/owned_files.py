#!/usr/bin/python
# Copyright (c) rlinf-ansible maintainers
# Apache-2.0 (see galaxy.yml)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: owned_files
short_description: Write a node's files in one call and keep the manifest of what rlinf-ansible created
description:
  - With O(state=present), writes every file of O(files) and O(secret_files) whose content, mode or
    owner differs (atomically, through a temporary file in the same directory), creates missing parent
    directories, and adds every path it created to the manifest O(manifest). O(record) adds paths other
    tasks created (a venv, a wheelhouse), with the file list of a tree taken now.
  - Refuses to overwrite a file that exists, is not in the manifest and does not carry the
    C(Managed by rlinf-ansible) header, unless it lies under C(/etc/rlinf) or C(/opt/rlinf)
    (an earlier install's).
  - With O(state=absent) (purge), removes exactly what the manifest lists, newest first - files,
    the listed files of trees, then directories only when empty - and the manifest itself. What it
    does not list (the operator's files, next to or inside ours) stays, and so does what a manifest of
    O(peer_manifests) lists too (another Ray node of the machine uses it).
  - Returns which files changed and whether one of them asks Ray to restart (C(restart)) or systemd
    to reload (C(reload)).
version_added: 0.2.0
author:
  - rlinf-ansible maintainers (!UNKNOWN)
attributes:
  check_mode:
    support: full
    description: Reports what would change; writes nothing.
  diff_mode:
    support: full
    description: Shows the change of every file of O(files); never of O(secret_files).
  platform:
    support: full
    platforms: posix
    description: Runs on the node.
options:
  manifest:
    description: This node's manifest (JSON).
    type: path
    required: true
  state:
    description: C(present) writes and records; C(absent) removes what the manifest lists.
    type: str
    choices: [present, absent]
    default: present
  files:
    description: Files to write.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path.
        type: path
        required: true
      content:
        description: The whole content.
        type: str
        required: true
      mode:
        description: Octal mode, for example C("0644").
        type: str
        default: "0644"
      owner:
        description: Owner (name or uid); unset keeps the writer's.
        type: str
      group:
        description: Group (name or gid); unset keeps the writer's.
        type: str
      restart:
        description: A change of this file means Ray must restart.
        type: bool
        default: false
      reload:
        description: A change of this file means systemd must reload its units.
        type: bool
        default: false
      fix:
        description:
          - What the refusal tells the operator to do when the file exists and rlinf-ansible did not write it
            (default C(choose another path for this setting)).
        type: str
  secret_files:
    description:
      - Like O(files), for contents that must never show (no diff; the content is masked in every output).
      - Ansible masks a content as a whole; one holding a newline or a quote is not recognised inside the
        logged invocation (the node's journal), so list the secrets it holds in O(secret_values) too.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path.
        type: path
        required: true
      content:
        description: The whole content; masked in every output.
        type: str
        required: true
      mode:
        description: Octal mode, for example C("0600").
        type: str
        default: "0644"
      owner:
        description: Owner (name or uid); unset keeps the writer's.
        type: str
      group:
        description: Group (name or gid); unset keeps the writer's.
        type: str
      restart:
        description: A change of this file means Ray must restart.
        type: bool
        default: false
      reload:
        description: A change of this file means systemd must reload its units.
        type: bool
        default: false
      fix:
        description:
          - What the refusal tells the operator to do when the file exists and rlinf-ansible did not write it
            (default C(choose another path for this setting)).
        type: str
  secret_values:
    description:
      - Secrets a O(secret_files) content holds (the values of an env file's lines), masked wherever they appear
        in this module's logged invocation and its result. Not used otherwise.
    type: list
    elements: str
    default: []
  remove:
    description:
      - Files to remove now (with O(state=present)) when they exist and are ours (listed in the manifest, or
        under C(/etc/rlinf) or C(/opt/rlinf)), for example the token file once authentication is off.
      - Each item is C(path) and, optionally, C(restart) / C(reload) as in O(files).
    type: list
    elements: dict
    default: []
  record:
    description:
      - Paths other tasks created to add to the manifest (C(path), C(kind) of file, dir, tree or venv).
      - A C(tree) is removed file by file as listed when recorded (what others added stays); a C(venv) is ours as
        a whole and goes with what was pip-installed into it, while it still has its C(pyvenv.cfg).
      - A path recorded before the task that creates it (an interrupted run leaves it listed) gets its missing
        parent directories now (O(dir_mode)), listed before it, so purge removes them after it when they are empty.
      - With C(new_only=true), a path is recorded only when it does not exist yet, is listed already, or is a file
        carrying the C(Managed by) header; a path that was there before rlinf-ansible is never adopted.
    type: list
    elements: dict
    default: []
  peer_manifests:
    description:
      - With O(state=absent), the manifests of the other Ray nodes of this machine. A path one of them lists
        (the machine's token file, which every Ray node of it uses) stays until the last of them is purged.
      - Read under a lock on the manifest's directory, so that the machine's nodes purged in one run agree on
        which of them removes what they share.
    type: list
    elements: path
    default: []
  dir_mode:
    description: Mode of the parent directories this module creates.
    type: str
    default: "0755"
"""

EXAMPLES = r"""
- name: Write the node's files
  rlinf.cluster.owned_files:
    manifest: /etc/rlinf/state/rlinf-ray.manifest.json
    files:
      - {path: /etc/rlinf/rlinf.env, content: "RLINF_NODE_RANK='1'\n", restart: true}
    secret_files:
      - {path: /etc/rlinf/ray-auth-token, content: "{{ token }}", mode: "0600", restart: true}
  no_log: true
  register: written

- name: Record the venv pip filled
  rlinf.cluster.owned_files:
    manifest: /etc/rlinf/state/rlinf-ray.manifest.json
    record: [{path: /opt/rlinf/venv, kind: venv}]

- name: List the overlay's directory before creating it (one that was there before stays the operator's)
  rlinf.cluster.owned_files:
    manifest: /etc/rlinf/state/easytier.manifest.json
    record: [{path: /opt/rlinf/easytier, kind: dir, new_only: true}]

- name: Purge what the manifest lists
  rlinf.cluster.owned_files:
    manifest: /etc/rlinf/state/rlinf-ray.manifest.json
    state: absent
    peer_manifests: [/etc/rlinf/state/rlinf-ray-b.manifest.json]
"""

RETURN = r"""
changed_paths:
  description: Files written (or removed, with O(state=absent)).
  returned: always
  type: list
  elements: str
created:
  description: Paths added to the manifest by this call.
  returned: always
  type: list
  elements: str
kept:
  description: With O(state=absent), listed directories kept because something else is inside.
  returned: always
  type: list
  elements: str
shared:
  description: With O(state=absent), listed paths kept because a manifest of O(peer_manifests) lists them too.
  returned: always
  type: list
  elements: str
venv_extra:
  description:
    - With O(state=absent), each venv removed (or, in check mode, to be removed) that holds more than was recorded
      when it was installed, and what that is (packages in site-packages, else top-level directories).
  returned: always
  type: dict
restart:
  description: Whether a changed file has C(restart).
  returned: always
  type: bool
reload:
  description: Whether a changed file has C(reload).
  returned: always
  type: bool
"""

import contextlib  # noqa: E402
import fcntl  # noqa: E402
import grp  # noqa: E402
import os  # noqa: E402
import pwd  # noqa: E402
import shutil  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.rlinf.cluster.plugins.module_utils.node_files import (  # noqa: E402
    KINDS,
    file_differs,
    is_ours,
    manifest_text,
    missing_parents,
    read_manifest,
    remove_tree_files,
    side_file,
    tree_files,
    tree_would_remain,
    write_atomic,
)

PROJECT_DIRS = ("/etc/rlinf", "/opt/rlinf")
FILE_SPEC = {
    "path": {"type": "path", "required": True},
    "content": {"type": "str", "required": True},
    "mode": {"type": "str", "default": "0644"},
    "owner": {"type": "str"},
    "group": {"type": "str"},
    "restart": {"type": "bool", "default": False},
    "reload": {"type": "bool", "default": False},
    "fix": {"type": "str"},
}
# Only the content is secret: the path and mode stay readable in the output.
SECRET_SPEC = dict(FILE_SPEC, content={"type": "str", "required": True, "no_log": True})


def _id(value, lookup, attr):
    if value is None:
        return None
    if str(value).isdigit():
        return int(value)
    return getattr(lookup(value), attr)


class Files:
    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.manifest = self.params["manifest"]
        self.entries = read_manifest(self.manifest)
        self.recorded = {e["path"] for e in self.entries}
        self.result = {
            "changed": False,
            "changed_paths": [],
            "created": [],
            "kept": [],
            "shared": [],
            "venv_extra": {},
            "restart": False,
            "reload": False,
        }
        self.diffs = []
        self.dropped = False

    def add(self, path, kind, tag=""):
        if path in self.recorded:
            # A venv recorded as a file list by an earlier release is ours as a whole now.
            for entry in self.entries:
                if entry["path"] == path and kind == "venv" and entry["kind"] == "tree":
                    entry["kind"] = "venv"
                    self.dropped = True
            return
        self.entries.append({"path": path, "kind": kind, "tag": tag})
        self.recorded.add(path)
        self.result["created"].append(path)

    def ensure_parents(self, path, record=True):
        for directory in missing_parents(path):
            if not self.module.check_mode:
                try:
                    os.mkdir(directory, int(self.params["dir_mode"], 8))
                except FileExistsError:
                    # Made between our look and our mkdir (another Ray node of this machine, as a
                    # rule): not ours, so not listed; that node's manifest lists it.
                    continue
            if record:
                self.add(directory, "dir")

    def foreign(self, path):
        if not os.path.lexists(path) or path in self.recorded:
            return False
        if any(path.startswith(d + "/") for d in PROJECT_DIRS):
            return False
        return not is_ours(path)

    def write(self, spec, secret):
        path = spec["path"]
        if self.foreign(path):
            self.module.fail_json(
                msg=f"{path} exists and rlinf-ansible did not write it (it is not in {self.manifest}); refusing to "
                f"overwrite it: {spec.get('fix') or 'choose another path for this setting'}.",
                **self.result,
            )
        mode = int(spec["mode"], 8)
        uid = _id(spec.get("owner"), pwd.getpwnam, "pw_uid")
        gid = _id(spec.get("group"), grp.getgrnam, "gr_gid")
        content = spec["content"].encode()
        existed = os.path.lexists(path)
        # An earlier install's file (under our project directories, or with our header) is ours.
        earlier = existed and (any(path.startswith(d + "/") for d in PROJECT_DIRS) or is_ours(path))
        content_differs, attrs_differ = file_differs(path, content, mode, uid, gid)
        if not (content_differs or attrs_differ):
            if earlier:
                self.add(path, "file")
            return
        if not secret and content_differs and self.module._diff:
            before = ""
            if existed and os.path.isfile(path):
                with open(path, encoding="utf-8", errors="replace") as handle:
                    before = handle.read()
            self.diffs.append({"before_header": path, "after_header": path, "before": before, "after": spec["content"]})
        self.ensure_parents(path)
        if not self.module.check_mode:
            write_atomic(path, content, mode, uid, gid)
        if not existed or earlier:
            self.add(path, "file")
        self.result["changed"] = True
        self.result["changed_paths"].append(path)
        self.result["restart"] = self.result["restart"] or spec.get("restart", False)
        self.result["reload"] = self.result["reload"] or spec.get("reload", False)

    def record(self, spec):
        path, kind = spec.get("path"), spec.get("kind", "file")
        if not isinstance(path, str) or not path.startswith("/") or kind not in KINDS:
            self.module.fail_json(msg=f"record: {spec!r} needs an absolute path and a kind of {', '.join(KINDS)}.")
        tree = kind in ("tree", "venv") and os.path.isdir(path) and not self.module.check_mode
        if kind in ("tree", "venv") and not self.module.check_mode:
            # The manifest's own directories are ours too, listed before the tree (even one not made
            # yet) so that purge (newest first) removes the tree while its file list is still there.
            self.ensure_parents(self.manifest)
        if spec.get("new_only") and self._there_before(path):
            return
        # Recorded before the task that creates it: its missing parents are made now and listed before it, so
        # purge removes them after it (the tool that creates the path would make them unlisted).
        self.ensure_parents(path)
        self.add(path, kind, spec.get("tag", ""))
        if tree:
            listing = "\n".join(tree_files(path)) + "\n"
            self.ensure_parents(side_file(self.manifest, path), record=False)
            write_atomic(side_file(self.manifest, path), listing.encode(), 0o644)

    def _there_before(self, path):
        """A path that exists, is not listed and is not a file with our header: somebody else's."""
        if path in self.recorded or not os.path.lexists(path):
            return False
        return not (os.path.isfile(path) and not os.path.islink(path) and is_ours(path))

    def remove_now(self, spec):
        path = spec.get("path")
        if not isinstance(path, str) or not os.path.lexists(path) or os.path.isdir(path):
            return
        if path not in self.recorded and not any(path.startswith(d + "/") for d in PROJECT_DIRS):
            return  # not ours: never removed
        if not self.module.check_mode:
            os.unlink(path)
        if path in self.recorded:
            self.entries = [e for e in self.entries if e["path"] != path]
            self.recorded.discard(path)
            self.dropped = True
        self.result["changed"] = True
        self.result["changed_paths"].append(path)
        self.result["restart"] = self.result["restart"] or bool(spec.get("restart"))
        self.result["reload"] = self.result["reload"] or bool(spec.get("reload"))

    def save(self):
        self.ensure_parents(self.manifest)
        text = manifest_text(self.entries)
        try:
            with open(self.manifest, encoding="utf-8") as handle:
                if handle.read() == text:
                    return
        except OSError:
            pass
        if not self.module.check_mode:
            write_atomic(self.manifest, text.encode(), 0o644)

    def present(self):
        for spec in self.params["files"]:
            self.write(spec, secret=False)
        for spec in self.params["secret_files"]:
            self.write(spec, secret=True)
        for spec in self.params["remove"]:
            self.remove_now(spec)
        for spec in self.params["record"]:
            self.record(spec)
        if self.result["created"] or self.dropped or not os.path.exists(self.manifest):
            self.save()

    def absent(self):
        with self._machine_lock():
            self._absent(self._peer_listed())

    @contextlib.contextmanager
    def _machine_lock(self):
        """The manifests of one machine's Ray nodes share a directory: its lock orders their purges."""
        directory = os.path.dirname(self.manifest)
        if not self.params["peer_manifests"] or not os.path.isdir(directory):
            yield
            return
        fd = os.open(directory, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _peer_listed(self):
        return {
            entry["path"]
            for peer in self.params["peer_manifests"]
            if os.path.abspath(peer) != os.path.abspath(self.manifest)
            for entry in read_manifest(peer)
        }

    def _absent(self, shared):
        # What this call removed, or would remove in check mode: a directory holding nothing
        # else would go too.
        self.gone = set()
        for entry in reversed(self.entries):
            path, kind = entry["path"], entry["kind"]
            if path in shared:
                if os.path.lexists(path):
                    self.result["shared"].append(path)
                continue
            if kind == "file":
                if os.path.lexists(path) and not os.path.isdir(path):
                    if not self.module.check_mode:
                        os.unlink(path)
                    self.removed(path)
            elif kind == "tree":
                self.remove_tree(path)
            elif kind == "venv":
                self.remove_venv(path)
            elif os.path.isdir(path) and not os.path.islink(path):
                if not self._would_be_empty(path):
                    self.result["kept"].append(path)
                    continue
                if not self.module.check_mode:
                    self._drop_manifest_files(path)
                    os.rmdir(path)
                self.removed(path)
        # Still there when its directory stays (or in check mode, dropped with its directory).
        if os.path.exists(self.manifest) and os.path.dirname(self.manifest) not in self.gone:
            if not self.module.check_mode:
                self._drop_manifest_files(os.path.dirname(self.manifest))
            self.result["changed_paths"].append(self.manifest)
        self.result["changed"] = bool(self.result["changed_paths"])

    def removed(self, path):
        self.gone.add(path)
        self.result["changed_paths"].append(path)

    def _would_be_empty(self, directory):
        left = {os.path.join(directory, name) for name in os.listdir(directory)} - self.gone
        return not left or self._only_manifest(directory, left)

    def remove_venv(self, path):
        """A venv we created goes whole, with what was pip-installed into it (packages are not user
        data); what it holds beyond the list recorded at install is named first."""
        if not os.path.isdir(path) or os.path.islink(path):
            return
        if not os.path.isfile(os.path.join(path, "pyvenv.cfg")):
            self.result["kept"].append(path)  # no longer a venv: what is there now is not ours
            return
        try:
            with open(side_file(self.manifest, path), encoding="utf-8") as handle:
                listed = {line for line in handle.read().splitlines() if line}
        except OSError:
            listed = set()
        added = installed_since(set(tree_files(path)) - listed)
        if added:
            self.result["venv_extra"][path] = added
        if not self.module.check_mode:
            shutil.rmtree(path)
        self.removed(path)

    def remove_tree(self, path):
        if not os.path.isdir(path):
            return
        listing = side_file(self.manifest, path)
        try:
            with open(listing, encoding="utf-8") as handle:
                files = [line for line in handle.read().splitlines() if line]
        except OSError:
            self.result["kept"].append(path)
            return
        if self.module.check_mode:
            if tree_would_remain(path, files):
                self.result["changed_paths"].append(path)
                self.result["kept"].append(path)
            else:
                self.removed(path)
            return
        removed, gone = remove_tree_files(path, files)
        if gone:
            self.removed(path)
        else:
            if removed:
                self.result["changed_paths"].append(path)
            self.result["kept"].append(path)

    def _only_manifest(self, directory, left):
        """Whether ``left`` (what stays in ``directory``) is nothing but this manifest and its side files."""
        mine = {self.manifest, self.manifest + ".d"}
        return os.path.dirname(self.manifest) == directory and left <= mine

    def _drop_manifest_files(self, directory):
        if os.path.dirname(self.manifest) != directory:
            return
        side_dir = self.manifest + ".d"
        if os.path.isdir(side_dir):
            for name in os.listdir(side_dir):
                os.unlink(os.path.join(side_dir, name))
            os.rmdir(side_dir)
        if os.path.exists(self.manifest):
            os.unlink(self.manifest)


def installed_since(files):
    """What the files a venv gained since it was recorded are: top-level names in site-packages
    (torch, rlinf-0.3.0.dist-info...), else the first directory (bin, share...)."""
    names = set()
    for rel in files:
        parts = rel.split(os.sep)
        inside = len(parts) > 3 and parts[0] == "lib" and parts[2] == "site-packages"
        names.add(parts[3] if inside else parts[0])
    return sorted(names)


def main():
    module = AnsibleModule(
        argument_spec={
            "manifest": {"type": "path", "required": True},
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
            "files": {"type": "list", "elements": "dict", "default": [], "options": FILE_SPEC},
            # Only each item's content is secret (SECRET_SPEC): no_log on the list would mask its paths too.
            "secret_files": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": SECRET_SPEC,
                "no_log": False,
            },
            "secret_values": {"type": "list", "elements": "str", "default": [], "no_log": True},
            "remove": {"type": "list", "elements": "dict", "default": []},
            "record": {"type": "list", "elements": "dict", "default": []},
            "peer_manifests": {"type": "list", "elements": "path", "default": []},
            "dir_mode": {"type": "str", "default": "0755"},
        },
        supports_check_mode=True,
    )
    files = Files(module)
    if module.params["state"] == "present":
        files.present()
    else:
        files.absent()
    if files.diffs:
        files.result["diff"] = files.diffs
    module.exit_json(**files.result)


if __name__ == "__main__":
    main()
