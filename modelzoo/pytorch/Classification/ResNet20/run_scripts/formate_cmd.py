"""Formats a launch command for printing: one `--flag value` per line, `\\`-continued."""
import shlex


def format_cmd(cmd):
    """Split `cmd` before each option so a long command reads one argument per line."""
    words = shlex.split(cmd)
    lines, current = [], []
    for word in words:
        if word.startswith("-") and current:
            lines.append(" ".join(shlex.quote(w) for w in current))
            current = []
        current.append(word)
    if current:
        lines.append(" ".join(shlex.quote(w) for w in current))
    return " \\\n    ".join(lines)
