package dev.layover.core.internal.engine;

import dev.layover.core.internal.db.StoredText;

/** How the engine names and describes exceptions of every shape (handlers and SDKs throw anything). */
final class Errors {

    private Errors() {}

    static String className(Throwable t, String fallback) {
        return t == null ? fallback : t.getClass().getName();
    }

    /** The reason, with the cause's message appended when it adds something. */
    static String message(String reason, Throwable cause) {
        if (cause == null) {
            return reason == null ? "failed" : reason;
        }
        String m = safeMessage(cause);
        if (reason != null && m != null && !reason.contains(m)) {
            return reason + ": " + m;
        }
        return reason != null ? reason : (m != null ? m : cause.getClass().getName());
    }

    /**
     * The message of {@code t}, or a description when its {@code getMessage()} itself throws; never
     * throws.
     */
    static String safeMessage(Throwable t) {
        if (t == null) {
            return null;
        }
        try {
            return t.getMessage();
        } catch (Throwable e) {
            return "(getMessage() of " + t.getClass().getName() + " threw " + e.getClass().getName() + ")";
        }
    }

    /** {@code ClassName: message} of {@code t}, cut, for a log line; never throws. */
    static String describe(Throwable t) {
        String m = safeMessage(t);
        return StoredText.cut(m == null ? t.getClass().getName() : t.getClass().getName() + ": " + m);
    }
}
