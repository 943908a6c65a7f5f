-- Traces (docs/operations.md, Traces). The W3C traceparent of the intake span that accepted the
-- event, when the accepting process exported traces; null otherwise (and for every event accepted
-- before this release). Each send of the event's deliveries links its span to it, in whichever
-- process and however much later the send happens.
ALTER TABLE events ADD COLUMN trace_context text;

-- Whether the webhook's notifications carry a W3C `traceparent` header naming the send's span, so
-- that the receiver's own traces can join Plaza's. Off by default: the header tells the receiver
-- Plaza's trace and span ids (docs/webhooks.md, Trace context).
ALTER TABLE webhooks ADD COLUMN send_traceparent boolean NOT NULL DEFAULT false;
