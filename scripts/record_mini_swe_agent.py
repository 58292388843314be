"""Record a real mini-SWE-agent run as a test fixture: `python scripts/record_mini_swe_agent.py`.

Why: the mini-SWE-agent importer must be tested on the trajectory mini really saves. mini
(`mini-swe-agent` from PyPI, pinned below, installed once into its own virtual environment under
.cache/recorders/) runs its default `mini.yaml` configuration (tool calling) on a task in a
scratch folder against the local OpenAI-compatible server (`sessionstore.testing.OpenAIServer`,
Chat Completions) with scripted replies: bash commands it really runs (one failing), then the
submit command. Everything in the trajectory — the prompts, calls, outputs and return codes,
usage, cost and the exit — is mini's own writing; only the model's words are scripted. Its home
is a temporary folder; it talks only to 127.0.0.1.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from recordlib import pip_install, scratch_env  # noqa: E402

from sessionstore.testing.anthropic_server import tool_use_reply  # noqa: E402
from sessionstore.testing.openai_server import OpenAIServer  # noqa: E402

PACKAGE = "mini-swe-agent"
VERSION = "2.4.6"
VENV = ROOT / ".cache" / "recorders" / f"mini-swe-agent-{VERSION}"
OUT = ROOT / "tests" / "fixtures" / "transcripts" / "mini-swe-agent" / "recorded" / "slugify.traj.json"
SLUG = "def slugify(text):\n    return text.lower().replace(' ', '-')\n"


def main() -> None:
    mini = pip_install(PACKAGE, VERSION, VENV, "mini")
    home = Path(tempfile.mkdtemp(prefix="mini-record-"))
    work = home / "slugify"
    work.mkdir()
    (work / "slug.py").write_text(SLUG)
    out = home / "run.traj.json"
    env = scratch_env(home, OPENAI_API_KEY="sk-local", MSWEA_CONFIGURED="true", MSWEA_COST_TRACKING="ignore_errors")
    try:
        with OpenAIServer() as server:
            server.enqueue(
                tool_use_reply("bash", {"command": "cat slug.py"}, text="Let me read slug.py first."),
                tool_use_reply("bash", {"command": "python -c \"import slug; print(repr(slug.slugify(' A b ')))\""},
                               text="Now what it does with surrounding spaces."),
                tool_use_reply("bash", {"command": "python -m pytest -q test_slug.py"},
                               text="There is no test file; pytest says so."),
                tool_use_reply("bash", {"command": "sed -i \"s/text.lower()/text.strip().lower()/\" slug.py && "
                                                   "python -c \"import slug; print(repr(slug.slugify(' A b ')))\""},
                               text="It keeps them as dashes: strip first."),
                tool_use_reply("bash", {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"},
                               text="slugify now strips surrounding spaces."))
            done = subprocess.run([str(mini), "-m", "openai/gpt-4.1", "-t", "Make slugify() strip surrounding spaces.",
                                   "-y", "--exit-immediately", "-o", str(out), "-c", "mini.yaml",
                                   "-c", f"model.model_kwargs.api_base={server.url}/v1"],
                                  env=env, cwd=work, capture_output=True, text=True, timeout=600, input="")
            print(f"mini: exit {done.returncode}; {len(server.requests)} requests served")
        data = json.loads(out.read_text(encoding="utf-8"))
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(data, indent=2).replace(str(home), "/home/user"), encoding="utf-8")
        print(f"wrote {OUT}")
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
