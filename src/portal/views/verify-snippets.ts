/** Receiver code for each language, with the maintained Standard Webhooks library of that language. */
export const VERIFY_SNIPPETS: { language: string; install: string; code: string }[] = [
  {
    language: 'Node.js',
    install: 'npm install standardwebhooks',
    code: `import express from 'express';
import { Webhook } from 'standardwebhooks';

const wh = new Webhook(process.env.PLAZA_WEBHOOK_SECRET); // "whsec_..."
const app = express();

// The raw body: the signature covers the exact bytes Plaza sent.
app.post('/hooks/plaza', express.raw({ type: 'application/json' }), (req, res) => {
  try {
    const notification = wh.verify(req.body.toString('utf8'), req.headers);
    // ... handle notification.topic_path, notification.payload
    // req.headers['plaza-entity-sequence'] (not signed: a hint) numbers the entity's notifications
    // 1, 2, 3...: a gap means one is missing; fetch it from GET .../notifications (the feed).
    res.sendStatus(204);
  } catch {
    res.sendStatus(400);
  }
});`,
  },
  {
    language: 'Python',
    install: 'pip install standardwebhooks',
    code: `import os
from flask import Flask, request
from standardwebhooks.webhooks import Webhook

wh = Webhook(os.environ["PLAZA_WEBHOOK_SECRET"])  # "whsec_..."
app = Flask(__name__)

@app.post("/hooks/plaza")
def plaza_hook():
    try:
        notification = wh.verify(request.get_data(), dict(request.headers))
    except Exception:
        return "", 400
    # ... handle notification["topic_path"], notification["payload"]
    return "", 204`,
  },
  {
    language: 'PHP',
    install: 'composer require standard-webhooks/standard-webhooks',
    code: `<?php
require 'vendor/autoload.php';

$wh = new \\StandardWebhooks\\Webhook(getenv('PLAZA_WEBHOOK_SECRET')); // "whsec_..."
$payload = file_get_contents('php://input');
$headers = [
    'webhook-id' => $_SERVER['HTTP_WEBHOOK_ID'] ?? '',
    'webhook-timestamp' => $_SERVER['HTTP_WEBHOOK_TIMESTAMP'] ?? '',
    'webhook-signature' => $_SERVER['HTTP_WEBHOOK_SIGNATURE'] ?? '',
];
try {
    $notification = $wh->verify($payload, $headers);
    // ... handle $notification['topic_path'], $notification['payload']
    http_response_code(204);
} catch (\\Exception $e) {
    http_response_code(400);
}`,
  },
  {
    language: 'Go',
    install: 'go get github.com/standard-webhooks/standard-webhooks/libraries',
    code: `package main

import (
	"io"
	"net/http"
	"os"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

func main() {
	wh, err := standardwebhooks.NewWebhook(os.Getenv("PLAZA_WEBHOOK_SECRET")) // "whsec_..."
	if err != nil {
		panic(err)
	}
	http.HandleFunc("/hooks/plaza", func(w http.ResponseWriter, r *http.Request) {
		payload, err := io.ReadAll(r.Body)
		if err != nil || wh.Verify(payload, r.Header) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		// ... json.Unmarshal(payload, &notification)
		w.WriteHeader(http.StatusNoContent)
	})
	http.ListenAndServe(":8080", nil)
}`,
  },
  {
    language: 'Java',
    install: 'Maven: com.standardwebhooks:standardwebhooks',
    code: `import com.standardwebhooks.Webhook;
import com.standardwebhooks.exceptions.WebhookVerificationException;
import java.net.http.HttpHeaders;
import java.util.List;
import java.util.Map;

public final class PlazaHook {
  private final Webhook webhook = new Webhook(System.getenv("PLAZA_WEBHOOK_SECRET")); // "whsec_..."

  /** payload: the raw request body; the three headers as received. */
  public boolean verify(String payload, String id, String timestamp, String signature) {
    HttpHeaders headers = HttpHeaders.of(Map.of(
        "webhook-id", List.of(id),
        "webhook-timestamp", List.of(timestamp),
        "webhook-signature", List.of(signature)), (name, value) -> true);
    try {
      webhook.verify(payload, headers);
      return true;
    } catch (WebhookVerificationException e) {
      return false;
    }
  }
}`,
  },
];
