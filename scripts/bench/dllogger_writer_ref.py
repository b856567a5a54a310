#!/usr/bin/env python3
"""Reference for the dllogger writer benchmark: tcap_dllogger's Logger.log + JSONStreamBackend
re-created (same calls: datetime.now, json.dumps of the record, str() of the data dict), logging
N records of 4 metrics to a JSON file. Prints the mean time per log call."""
import json, os, sys, tempfile, time
from datetime import datetime

class JSONStreamBackend:
    def __init__(self, verbosity, filename):
        self.verbosity, self.file = verbosity, open(filename, "w")
    def log(self, timestamp, elapsedtime, step, data):
        new_data = {}
        for key, value in data.items():
            new_data[key] = int(value) if key == "rank" and not isinstance(value, str) else value
        data = {key: str(value) for key, value in new_data.items()}
        self.file.write("TCAPPDLL {}\n".format(json.dumps(dict(
            timestamp=str(timestamp.timestamp()), datetime=str(timestamp),
            elapsedtime=str(elapsedtime), type="LOG", step=step, data=str(data)))))
    def flush(self):
        self.file.flush()

class Logger:
    def __init__(self, backends):
        self.backends, self.starttime = backends, datetime.now()
    def log(self, step, data, verbosity=1):
        timestamp = datetime.now()
        elapsedtime = (timestamp - self.starttime).total_seconds()
        for b in self.backends:
            if b.verbosity >= verbosity:
                b.log(timestamp, elapsedtime, step, data)

n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
with tempfile.TemporaryDirectory() as d:
    logger = Logger([JSONStreamBackend(1, os.path.join(d, "bench.json"))])
    t0 = time.perf_counter()
    for i in range(n):
        loss = 1.0 / (1.0 + i)
        logger.log(step=(i // 1000, i % 1000), data={"train.loss": loss,
                   "train.ips": 23350.335421016007 + loss, "train.lr": 0.1,
                   "train.total_time": i * 0.0125}, verbosity=0)
    logger.backends[0].flush()
    dt = time.perf_counter() - t0
print(f"python tcap-style JSONStreamBackend: {n} logs in {dt:.3f} s = {dt / n * 1e6:.2f} us/log")
