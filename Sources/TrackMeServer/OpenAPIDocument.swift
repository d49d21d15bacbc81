/// The API as OpenAPI 3.1, served at `/openapi.yaml`. The wire messages are specified in
/// `Sources/TrackMeCore/WIRE.md`; this document refers to it rather than repeating every field.
enum OpenAPIDocument {
    static let yaml = """
        openapi: 3.1.0
        info:
          title: TrackMe server
          version: "1"
          description: |
            Batch ingest, alert intake and acknowledgement, and the dispatcher feed for TrackMe Edge
            agents. Message bodies follow the wire format version 1 (Sources/TrackMeCore/WIRE.md).
            Every 4xx/5xx body is an Error. Bearer tokens: admin (configured), device and dispatcher
            (issued once by the admin endpoints, stored only as SHA-256 hashes).
        servers:
          - url: http://127.0.0.1:8080
        security:
          - bearer: []
        paths:
          /health:
            get:
              summary: Liveness
              security: []
              responses:
                "200": {description: Serving, content: {application/json: {schema: {type: object, properties: {status: {const: ok}}}}}}
          /metrics:
            get:
              summary: Prometheus text-format metrics (trackme_server_*)
              security: []
              responses:
                "200": {description: Metrics, content: {text/plain: {schema: {type: string}}}}
          /openapi.yaml:
            get:
              summary: This document
              security: []
              responses:
                "200": {description: OpenAPI 3.1, content: {application/yaml: {schema: {type: string}}}}
          /v1/devices:
            post:
              summary: Enrol a device (admin)
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      type: object
                      required: [device_id, person]
                      properties:
                        device_id: {type: string, pattern: "^[A-Za-z0-9._-]{1,64}$"}
                        person:
                          type: object
                          required: [name, age]
                          properties:
                            name: {type: string, minLength: 1}
                            age: {type: integer, minimum: 0, maximum: 150}
                            resting_hr: {type: [integer, "null"]}
                            min_hr: {type: [integer, "null"]}
                            max_hr: {type: [integer, "null"]}
              responses:
                "201":
                  description: Enrolled; the token is shown only this once
                  content:
                    application/json:
                      schema:
                        type: object
                        required: [device_id, token]
                        properties: {device_id: {type: string}, token: {type: string}}
                "400": {$ref: "#/components/responses/BadRequest"}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "403": {$ref: "#/components/responses/Forbidden"}
                "409": {description: Device id already enrolled, content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
                "413": {$ref: "#/components/responses/TooLarge"}
          /v1/dispatchers:
            post:
              summary: Create a dispatcher token (admin)
              requestBody:
                required: false
                content:
                  application/json:
                    schema: {type: object, properties: {name: {type: [string, "null"]}}}
              responses:
                "201":
                  description: Created; the token is shown only this once
                  content:
                    application/json:
                      schema:
                        type: object
                        required: [dispatcher_id, token]
                        properties: {dispatcher_id: {type: string}, token: {type: string}}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "403": {$ref: "#/components/responses/Forbidden"}
          /v1/batches:
            post:
              summary: Ingest a sync batch (device)
              description: |
                Stores each reading once per (device_id, seq). The same idempotency key again gets
                the same acknowledgement and stores nothing. A batch with no readings and a
                heartbeat is a heartbeat. A rejected batch stores nothing.
              parameters:
                - {name: Idempotency-Key, in: header, required: false, schema: {type: string}, description: "DEVICE_ID:BATCH_SEQ, equal to the body's idempotency_key"}
                - {name: Content-Encoding, in: header, required: false, schema: {enum: [gzip, identity]}}
              requestBody:
                required: true
                content:
                  application/json:
                    schema: {$ref: "#/components/schemas/SyncBatch"}
              responses:
                "200":
                  description: Acknowledgement
                  content:
                    application/json:
                      schema:
                        type: object
                        required: [version, idempotency_key, stored, duplicates, acknowledged_alerts]
                        properties:
                          version: {const: 1}
                          idempotency_key: {type: string}
                          stored: {type: integer}
                          duplicates: {type: integer}
                          acknowledged_alerts: {type: array, items: {type: string}}
                "400": {$ref: "#/components/responses/BadRequest"}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "403": {$ref: "#/components/responses/Forbidden"}
                "413": {$ref: "#/components/responses/TooLarge"}
                "415": {description: Content-Encoding other than gzip, content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
          /v1/alerts:
            post:
              summary: An alert or alert update (device); idempotent by (alert_id, update_seq)
              requestBody:
                required: true
                content:
                  application/json:
                    schema: {$ref: "#/components/schemas/AlertUpdate"}
              responses:
                "200":
                  description: Accepted (or already had)
                  content:
                    application/json:
                      schema:
                        type: object
                        required: [version, alert_id, update_seq, duplicate, acknowledged]
                        properties:
                          version: {const: 1}
                          alert_id: {type: string}
                          update_seq: {type: integer}
                          duplicate: {type: boolean}
                          acknowledged: {type: boolean}
                "400": {$ref: "#/components/responses/BadRequest"}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "403": {$ref: "#/components/responses/Forbidden"}
                "413": {$ref: "#/components/responses/TooLarge"}
          /v1/alerts/stream:
            get:
              summary: Dispatcher feed (Server-Sent Events)
              description: |
                Events `alert` (data: the AlertUpdate as received), `alert_acknowledged`
                (data: {alert_id, device_id, acknowledged_ms}), `device_silent`
                (data: {device_id, last_seen_ms, silent_for_ms}) and `device_returned`
                (data: {device_id, last_seen_ms}). Every event has an increasing `id`; reconnect
                with `Last-Event-ID` (or ?last_event_id=) to get every event after it. Without
                it the feed starts from its first event. Comments (`: keep-alive`) every 5 s.
              parameters:
                - {name: Last-Event-ID, in: header, required: false, schema: {type: string}}
                - {name: last_event_id, in: query, required: false, schema: {type: integer}}
              responses:
                "200": {description: Event stream, content: {text/event-stream: {schema: {type: string}}}}
                "400": {$ref: "#/components/responses/BadRequest"}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "403": {$ref: "#/components/responses/Forbidden"}
          /v1/alerts/{id}/ack:
            post:
              summary: Acknowledge an alert (dispatcher); the device learns of it in its next batch acknowledgement
              parameters:
                - {name: id, in: path, required: true, schema: {type: string}}
              responses:
                "200":
                  description: Acknowledged (idempotent)
                  content:
                    application/json:
                      schema:
                        type: object
                        properties:
                          alert_id: {type: string}
                          device_id: {type: string}
                          acknowledged: {const: true}
                          already_acknowledged: {type: boolean}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "403": {$ref: "#/components/responses/Forbidden"}
                "404": {$ref: "#/components/responses/NotFound"}
          /v1/devices/{id}/readings:
            get:
              summary: Stored readings of a device (admin, dispatcher), in seq order, paged
              parameters:
                - {name: id, in: path, required: true, schema: {type: string}}
                - {name: from, in: query, schema: {type: integer}, description: "placed_ms >= from (ms since epoch)"}
                - {name: to, in: query, schema: {type: integer}, description: "placed_ms < to"}
                - {name: kind, in: query, schema: {enum: [hr, fix]}}
                - {name: after_seq, in: query, schema: {type: integer}, description: "page cursor: next_after_seq of the previous page"}
                - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 1000}}
              responses:
                "200":
                  description: A page
                  content:
                    application/json:
                      schema:
                        type: object
                        required: [device_id, readings, next_after_seq]
                        properties:
                          device_id: {type: string}
                          next_after_seq: {type: [integer, "null"]}
                          readings:
                            type: array
                            items:
                              description: |
                                A wire reading (WIRE.md) plus placed_ms (where it is filed: its wall
                                time if trusted and plausible, else the time the server received it),
                                received_ms, and time_flag (null, no_wall_clock, untrusted_clock,
                                future, before_enrolment).
                              type: object
                "400": {$ref: "#/components/responses/BadRequest"}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "403": {$ref: "#/components/responses/Forbidden"}
                "404": {$ref: "#/components/responses/NotFound"}
        components:
          securitySchemes:
            bearer: {type: http, scheme: bearer}
          responses:
            BadRequest: {description: "Malformed JSON, missing or wrong field (named in error.field)", content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
            Unauthorized: {description: Missing or wrong token, content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
            Forbidden: {description: "Right token, wrong role, or another device's data", content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
            NotFound: {description: No such resource, content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
            TooLarge: {description: "Body over the limit, compressed or inflated", content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
          schemas:
            Error:
              type: object
              required: [error]
              properties:
                error:
                  type: object
                  required: [code, field, message]
                  properties:
                    code: {enum: [missing_field, wrong_type, invalid_value, malformed_json, unauthorized, forbidden, too_large, not_found, conflict, unsupported_media_type, internal]}
                    field: {type: [string, "null"]}
                    message: {type: string}
            Timestamp:
              type: object
              required: [mono_ns, boot_id, wall_trusted]
              properties:
                mono_ns: {type: integer, minimum: 0}
                boot_id: {type: string}
                wall_ms: {type: [integer, "null"]}
                wall_trusted: {type: boolean}
            SyncBatch:
              type: object
              description: WIRE.md, "A sync batch"
              required: [version, device_id, batch_seq, idempotency_key, dropped_by_budget, readings]
              properties:
                version: {const: 1}
                device_id: {type: string}
                batch_seq: {type: integer}
                idempotency_key: {type: string}
                dropped_by_budget: {type: integer}
                heartbeat:
                  type: [object, "null"]
                  properties:
                    strap: {type: string}
                    gpsd: {type: string}
                    store_depth: {type: integer}
                    store_bytes: {type: integer}
                    battery_pct: {type: [integer, "null"]}
                readings:
                  type: array
                  items:
                    type: object
                    required: [seq, kind, t]
                    properties:
                      seq: {type: integer, minimum: 1}
                      kind: {enum: [hr, fix]}
                      t: {$ref: "#/components/schemas/Timestamp"}
                      hr: {type: object}
                      fix: {type: object}
            AlertUpdate:
              type: object
              description: WIRE.md, "An alert or alert update"
              required: [version, alert, update_seq, type, sent]
              properties:
                version: {const: 1}
                alert: {type: object}
                update_seq: {type: integer, minimum: 0}
                type: {enum: [raised, position, cancelled, resolved]}
                sent: {$ref: "#/components/schemas/Timestamp"}
        """
}
