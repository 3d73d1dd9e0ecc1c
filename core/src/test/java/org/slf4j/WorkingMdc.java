package org.slf4j;

import org.slf4j.helpers.BasicMDCAdapter;

/**
 * The tests' logging backend (slf4j-simple) keeps no MDC (its adapter is a no-op), as a backend
 * without MDC support would; tests of what Layover puts into the MDC install SLF4J's own
 * thread-local adapter, as logback or log4j would provide one. In package {@code org.slf4j} because
 * {@code MDC.setMDCAdapter} is package-private.
 */
public final class WorkingMdc {

    private WorkingMdc() {}

    /** Installs {@link BasicMDCAdapter} (once; harmless to call again). */
    public static synchronized void install() {
        if (!(MDC.getMDCAdapter() instanceof BasicMDCAdapter)) {
            MDC.setMDCAdapter(new BasicMDCAdapter());
        }
    }
}
