package dev.layover.core.internal.db;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A statement read from a {@code .sql} resource under {@code dev/layover/core/sql/}, with named
 * parameters ({@code :name}; {@code ::type} is a cast, and quoted text and comments are left alone)
 * bound by name. A statement's text is what runs: nothing is assembled from fragments.
 */
public final class NamedSql {

    private static final String ROOT = "/dev/layover/core/sql/";

    private final String name;
    private final String jdbc;
    private final List<String> order;

    private NamedSql(String name, String jdbc, List<String> order) {
        this.name = name;
        this.jdbc = jdbc;
        this.order = order;
    }

    /**
     * @param file the resource's name under {@code dev/layover/core/sql/}, without {@code .sql}
     * @return the statement
     * @throws IllegalStateException when the resource is missing
     */
    public static NamedSql load(String file) {
        try (InputStream in = NamedSql.class.getResourceAsStream(ROOT + file + ".sql")) {
            if (in == null) {
                throw new IllegalStateException("missing SQL resource " + ROOT + file + ".sql");
            }
            return parse(file, new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** @return the statement of {@code text}, its {@code :name} parameters replaced by {@code ?} */
    static NamedSql parse(String name, String text) {
        StringBuilder out = new StringBuilder(text.length());
        List<String> order = new ArrayList<>();
        int i = 0;
        int n = text.length();
        while (i < n) {
            char c = text.charAt(i);
            if (c == '\'' || c == '"') { // quoted: copied as it is
                int end = text.indexOf(c, i + 1);
                end = end < 0 ? n - 1 : end;
                out.append(text, i, end + 1);
                i = end + 1;
            } else if (c == '-' && i + 1 < n && text.charAt(i + 1) == '-') { // a comment: dropped
                int end = text.indexOf('\n', i);
                i = end < 0 ? n : end;
            } else if (c == ':' && i + 1 < n && text.charAt(i + 1) == ':') { // a cast
                out.append("::");
                i += 2;
            } else if (c == ':' && i + 1 < n && Character.isJavaIdentifierStart(text.charAt(i + 1))) {
                int end = i + 1;
                while (end < n && Character.isJavaIdentifierPart(text.charAt(end))) {
                    end++;
                }
                order.add(text.substring(i + 1, end));
                out.append('?');
                i = end;
            } else {
                out.append(c);
                i++;
            }
        }
        return new NamedSql(name, out.toString().strip(), List.copyOf(order));
    }

    /** @return the statement's name (its resource) */
    public String name() {
        return name;
    }

    /** @return the parameters' names, once each, in the order they first appear */
    public Set<String> parameters() {
        return new LinkedHashSet<>(order);
    }

    /** @return the statement as JDBC runs it */
    public String jdbc() {
        return jdbc;
    }

    /**
     * Prepares the statement and binds every parameter from {@code values}.
     *
     * @param c the connection
     * @param values a value for each parameter name (null values bind SQL NULL)
     * @return the prepared statement, for the caller to run and close
     * @throws SQLException on a database error
     * @throws IllegalArgumentException when a parameter has no value
     */
    public PreparedStatement prepare(Connection c, Map<String, ?> values) throws SQLException {
        PreparedStatement ps = c.prepareStatement(jdbc);
        try {
            for (int k = 0; k < order.size(); k++) {
                String p = order.get(k);
                if (!values.containsKey(p)) {
                    throw new IllegalArgumentException(name + ".sql: no value for :" + p);
                }
                ps.setObject(k + 1, values.get(p));
            }
            return ps;
        } catch (SQLException | RuntimeException e) {
            ps.close();
            throw e;
        }
    }
}
