"""Reading the process table from /proc without a library: one place that
parses /proc/PID/stat (the command name may hold spaces and parentheses, so
the fields are taken after the last ')')."""
import os


def stat_all():
    """Yield (pid, fields) for every process; fields[0] is the state,
    fields[1] the parent pid, fields[19] the start time (stat(5) numbering
    from field 3). Processes that vanish while being read are skipped."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        yield int(d), fields
