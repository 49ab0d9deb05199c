#!/usr/bin/python3
"""A scripted OpenAI-compatible endpoint for trying an environment by hand: it answers the given
replies in order (the last one repeats), streamed or not, and saves every image it is sent as
step<N>_image<K>.png in the current folder. Not a model: it never looks at the images.

    scripted_endpoint.py PORT "Action: click(start_box='(103,252)')" "Action: finished(content='ok')"
    iris run --env desktop:portal --endpoint http://127.0.0.1:PORT/v1 --action-format uitars ...
"""
import base64
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer


class Handler(BaseHTTPRequestHandler):
    replies = []
    step = 0

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        images = 0
        for message in request.get("messages", []):
            if not isinstance(message.get("content"), list):
                continue
            for part in message["content"]:
                if part.get("type") == "image_url":
                    images += 1
                    data = part["image_url"]["url"].split(",", 1)[1]
                    with open(f"step{Handler.step}_image{images}.png", "wb") as out:
                        out.write(base64.b64decode(data))
        reply = Handler.replies[min(Handler.step, len(Handler.replies) - 1)]
        Handler.step += 1
        if request.get("stream"):
            chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": reply},
                                    "finish_reason": None}]},
                      {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
            body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            self.answer(body.encode(), "text/event-stream")
        else:
            body = {"object": "chat.completion", "model": "scripted",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": reply}}]}
            self.answer(json.dumps(body).encode(), "application/json")

    def answer(self, body, content_type):
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    Handler.replies = sys.argv[2:]
    HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
