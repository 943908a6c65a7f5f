-- The fan-out's webhooks by two equalities (src/events/events.repository.ts, matchingWebhooks): the
-- event's marketplace and its topic's family, the event's own topic, which a webhook topic of the
-- form order/status_change/entered_<status> shares with order/status_change. The intake's checks
-- and fan-out are prepared statements; a generic plan made while the webhooks were few searched
-- webhooks_matching_or_held by the marketplace alone (its `topic = ANY($n)` counts as ten index
-- descents) and then read every webhook of the marketplace at each event (intake-plans.test.ts).
-- With scalar equalities on both leading columns, every plan searches both.
-- webhooks_matching_or_held stays for one release: the previous release's fan-out uses it (with
-- the topic as a third column here, its plans chose this index and searched by the marketplace only).
CREATE INDEX webhooks_fan_out ON webhooks (marketplace_code, (split_part(topic, '/entered_', 1)))
  WHERE active OR disabled_reason IN ('disabled_by_user', 'tenant_deactivated');
