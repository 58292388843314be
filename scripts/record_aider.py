"""Record real Aider runs as a test fixture: `python scripts/record_aider.py`.

Why: the Aider importer must be tested on the chat history Aider really writes. Aider
(`aider-chat` from PyPI, pinned below, installed once into its own virtual environment under
.cache/recorders/) runs twice in one scratch repository against the local OpenAI-compatible
server (`sessionstore.testing.OpenAIServer`, Chat Completions) with scripted replies: a chat
read from stdin (a question with `/ask`, an edit in Aider's diff format that it applies, `/run`
whose output the user adds to the chat, a follow-up, `/tokens`, `/clear`, a last question), then
a one-shot `--message` run. Both runs append to the same `.aider.chat.history.md`, as they do
in a user's repository. Everything in the file is Aider's writing; only the model's words are
scripted. Its home is a temporary folder; it talks only to 127.0.0.1.

Re-recording changes the times (and the server's port in the command line), so the tests that
pin facts of the file must be updated with it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from recordlib import pip_install, scratch_env  # noqa: E402

from sessionstore.testing.anthropic_server import text_reply  # noqa: E402
from sessionstore.testing.openai_server import OpenAIServer  # noqa: E402

PACKAGE = "aider-chat"
VERSION = "0.86.2"
VENV = ROOT / ".cache" / "recorders" / f"aider-{VERSION}"
OUT = ROOT / "tests" / "fixtures" / "transcripts" / "aider" / "recorded" / ".aider.chat.history.md"
SLUG = "import re\n\n\ndef slugify(text):\n    return re.sub(r'[^a-z0-9]+', '-', text.lower())\n"


def main() -> None:
    aider = pip_install(PACKAGE, VERSION, VENV, "aider")  # aider 0.86: Python 3.10 to 3.12
    home = Path(tempfile.mkdtemp(prefix="aider-record-"))
    work = home / "slugify"
    work.mkdir()
    (work / "slug.py").write_text(SLUG)
    env = scratch_env(home)
    try:
        with OpenAIServer() as server:
            common = [str(aider), "--model", "openai/gpt-4.1", "--openai-api-base", f"{server.url}/v1",
                      "--openai-api-key", "sk-local", "--no-git", "--yes-always", "--no-analytics",
                      "--no-check-update", "--no-show-model-warnings", "--map-tokens", "0", "--no-pretty",
                      "--no-stream", "--no-show-release-notes", "--no-auto-lint"]
            server.enqueue(
                text_reply("`slugify` lower-cases the text and replaces every run of other characters with `-`; "
                           "it keeps leading and trailing dashes."),
                text_reply("I'll strip the dashes at both ends.\n\nslug.py\n```python\n<<<<<<< SEARCH\n"
                           "    return re.sub(r'[^a-z0-9]+', '-', text.lower())\n=======\n"
                           "    return re.sub(r'[^a-z0-9]+', '-', text.lower()).strip('-')\n>>>>>>> REPLACE\n```\n"),
                text_reply("The output `hello-world` has no dash at either end: the edit works."),
                text_reply("A fresh chat: `slug.py` holds one function, `slugify(text)`."))
            chat = ("/ask What does slugify do with leading spaces?\n"
                    "Make slugify strip the dashes at both ends.\n"
                    "/run python -c \"import slug; print(slug.slugify('  Hello, World!  '))\"\n"
                    "Does the output show that it works?\n"
                    "/tokens\n/clear\n"
                    "What does slug.py hold?\n")
            done = subprocess.run([*common, "slug.py"], env=env, cwd=work, input=chat, capture_output=True,
                                  text=True, timeout=600)
            print(f"aider chat: exit {done.returncode}")
            server.enqueue(text_reply("Yes: `slugify('a b')` returns `a-b`."))
            done = subprocess.run([*common, "--message", "Does slugify('a b') return 'a-b'?", "slug.py"], env=env,
                                  cwd=work, capture_output=True, text=True, timeout=600)
            print(f"aider --message: exit {done.returncode}; {len(server.requests)} requests served")
        text = (work / ".aider.chat.history.md").read_text(encoding="utf-8").replace(str(home), "/home/user").replace(
            str(ROOT), "/home/user/sessionstore")
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(text, encoding="utf-8")
        print(f"wrote {OUT} ({len(text.splitlines())} lines)")
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
