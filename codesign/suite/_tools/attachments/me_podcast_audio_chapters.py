"""Attachments of me-podcast-audio-chapters (and the episode audio the app itself plays)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

TASK = "me-podcast-audio-chapters"

# The producer's voice memo. Chapter five is first misspoken and then corrected, as people do.
MEMO = (
    "Hi, it's Maya. Here are the chapter markers for episode forty-eight, the seed saving one. "
    "Chapter one, at zero minutes: Welcome and listener mail. "
    "Chapter two, at four minutes twenty seconds: Why save your own seeds. "
    "Chapter three, at twelve minutes five seconds: Drying and cleaning seeds. "
    "Chapter four, at twenty-one minutes forty seconds: Storing seeds over winter. "
    "Chapter five, at thirty-two minutes... no, sorry, at thirty-three minutes fifteen seconds: "
    "The community seed library. "
    "And chapter six, at thirty-eight minutes fifty seconds: Listener questions. "
    "That's all six. Thanks!"
)
EPISODE_SECONDS = 41 * 60 + 27  # 41:27, the length the page states


def _run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


def generate(out: Path) -> None:
    """The voice memo (espeak-ng + sox, encoded to mono 16 kHz MP3) and the app's episode placeholder."""
    with tempfile.TemporaryDirectory() as tmp:
        raw, clean = Path(tmp) / "memo.wav", Path(tmp) / "memo16k.wav"
        _run("espeak-ng", "-v", "en-us", "-s", "150", "-p", "45", "-w", str(raw), MEMO)
        # A phone memo: mono 16 kHz, a touch of high-pass, short silence around it.
        # -R -D: repeatable output without random dither.
        _run("sox", "-R", "-D", str(raw), "-r", "16000", "-c", "1", "-b", "16", str(clean),
             "highpass", "120", "pad", "0.4", "0.6", "norm", "-1")  # fmt: skip
        _run("ffmpeg", "-v", "error", "-y", "-i", str(clean), "-c:a", "libmp3lame", "-b:a", "32k",
             "-ar", "16000", "-ac", "1", "-fflags", "+bitexact", "-flags:a", "+bitexact",
             "-map_metadata", "-1", "-id3v2_version", "0", "-write_xing", "0",
             str(out / "chapter-memo.mp3"))  # fmt: skip
    # The page's own episode file: a 41:27 silent placeholder. FLAC codes digital silence as
    # constant subframes, so with large blocks the whole episode is about 12 KB.
    app_audio = out.parent / "app" / "episode-48.flac"
    app_audio.parent.mkdir(parents=True, exist_ok=True)
    _run("ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "anullsrc=r=8000:cl=mono",
         "-t", str(EPISODE_SECONDS), "-c:a", "flac", "-frame_size", "65535", "-fflags", "+bitexact",
         "-flags:a", "+bitexact", "-map_metadata", "-1", str(app_audio))  # fmt: skip
