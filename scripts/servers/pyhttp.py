"""Python's ThreadingHTTPServer (a thread per connection) answering every GET with 4 KiB over
HTTP/1.1 keep-alive, on 127.0.0.1:PORT, for scripts/trace-pyhttp.sh. Writes its PID to
PID_FILE; exits at once on SIGTERM.

Usage: pyhttp.py PORT PID_FILE"""
import http.server
import os
import signal
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    body = b"x" * 4096

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        # ab speaks HTTP/1.0 and keeps a connection only when the reply says so (which also
        # keeps it open here: only when asked).
        if self.headers.get("Connection", "").lower() == "keep-alive":
            self.send_header("Connection", "keep-alive")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


def main():
    port, pid_file = int(sys.argv[1]), sys.argv[2]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    # Out at once: handler threads blocked on idle keep-alive connections must not hold it.
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    with open(pid_file, "w") as f:
        f.write(str(os.getpid()))
    server.serve_forever()


if __name__ == "__main__":
    main()
