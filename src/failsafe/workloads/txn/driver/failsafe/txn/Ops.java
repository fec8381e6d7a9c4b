/*
 * The ops, as failsafe's OpWriter writes them (failsafe/history/recorder.py): one JSON object per line on stdout.
 */
package failsafe.txn;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;

import failsafe.txn.Errors.DriverError;

/** One JSON line per op: time_ns, process, type, f, then the fields in the order given. Called from the driver's
 *  thread and the producer's I/O thread (send callbacks), hence synchronized. */
final class Ops {
    static final long FLUSH_INTERVAL_NS = 50_000_000L;
    final OutputStream out;
    final String process;
    long lastFlushNs = System.nanoTime();

    Ops(OutputStream out, String process) {
        this.out = out;
        this.process = process;
    }

    synchronized void op(String type, String f, Object... fields) {
        StringBuilder b = new StringBuilder(256);
        Instant now = Instant.now();
        b.append("{\"time_ns\":").append(now.getEpochSecond() * 1_000_000_000L + now.getNano());
        b.append(",\"process\":");
        json(b, process);
        b.append(",\"type\":");
        json(b, type);
        b.append(",\"f\":");
        json(b, f);
        for (int i = 0; i < fields.length; i += 2) {
            b.append(',');
            json(b, fields[i]);
            b.append(':');
            json(b, fields[i + 1]);
        }
        b.append("}\n");
        try {
            out.write(b.toString().getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new DriverError("cannot write to stdout: " + e.getMessage());
        }
        if (System.nanoTime() - lastFlushNs >= FLUSH_INTERVAL_NS) {
            flush();
        }
    }

    synchronized void flush() {
        try {
            out.flush();
        } catch (IOException e) {
            throw new DriverError("cannot write to stdout: " + e.getMessage());
        }
        lastFlushNs = System.nanoTime();
    }

    static void json(StringBuilder b, Object value) {
        if (value == null) {
            b.append("null");
        } else if (value instanceof String) {
            string(b, (String) value);
        } else if (value instanceof Number || value instanceof Boolean) {
            b.append(value);
        } else if (value instanceof Map) {
            b.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) value).entrySet()) {
                if (!first) b.append(',');
                first = false;
                string(b, String.valueOf(e.getKey()));
                b.append(':');
                json(b, e.getValue());
            }
            b.append('}');
        } else if (value instanceof Collection) {
            b.append('[');
            boolean first = true;
            for (Object item : (Collection<?>) value) {
                if (!first) b.append(',');
                first = false;
                json(b, item);
            }
            b.append(']');
        } else {
            string(b, value.toString());
        }
    }

    static void string(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        b.append('"');
    }

    /** A JSON object's fields in the order given (key, value, key, value, ...). */
    static Map<String, Object> obj(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }
}
