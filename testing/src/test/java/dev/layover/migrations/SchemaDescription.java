package dev.layover.migrations;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import javax.sql.DataSource;

/**
 * A complete description of schema {@code layover} read from the catalogs by {@code describe-schema.sql}:
 * one entry per object (tables with their columns in order, views, indexes, constraints, sequences,
 * functions with their properties, triggers, types, extensions, comments, grants), keyed by kind
 * and name. Two databases have the same schema when their descriptions are equal.
 */
record SchemaDescription(SortedMap<String, String> objects) {

    private static final String QUERY = load("describe-schema.sql");

    static SchemaDescription of(DataSource dataSource) {
        SortedMap<String, String> objects = new TreeMap<>();
        try (Connection c = dataSource.getConnection();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery(QUERY)) {
            while (rs.next()) {
                String previous = objects.put(rs.getString(1), Objects.toString(rs.getString(2), ""));
                if (previous != null) {
                    throw new IllegalStateException("two objects described as " + rs.getString(1));
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException("describing schema layover: " + e.getMessage(), e);
        }
        return new SchemaDescription(objects);
    }

    /** @return this description without the entries of the given functions (their definitions and comments) */
    SchemaDescription withoutFunctions(Collection<String> signatures) {
        SortedMap<String, String> kept = new TreeMap<>(objects);
        for (String signature : signatures) {
            kept.remove("function " + signature);
            kept.remove("comment on function " + signature);
        }
        return new SchemaDescription(kept);
    }

    boolean hasFunction(String signature) {
        return objects.containsKey("function " + signature);
    }

    /**
     * @return the differences from {@code other}, readable: each object only in one of them, and for
     *     each object in both with another definition, the lines that differ; empty when none
     */
    String diff(String name, SchemaDescription other, String otherName) {
        StringBuilder out = new StringBuilder();
        TreeSet<String> keys = new TreeSet<>(objects.keySet());
        keys.addAll(other.objects.keySet());
        for (String key : keys) {
            String mine = objects.get(key);
            String theirs = other.objects.get(key);
            if (Objects.equals(mine, theirs)) {
                continue;
            }
            if (theirs == null) {
                out.append("only in ").append(name).append(": ").append(key).append('\n');
                indent(out, mine);
            } else if (mine == null) {
                out.append("only in ").append(otherName).append(": ").append(key).append('\n');
                indent(out, theirs);
            } else {
                out.append("differs: ").append(key).append('\n');
                lineDiff(out, mine.split("\n", -1), theirs.split("\n", -1), name, otherName);
            }
        }
        return out.toString();
    }

    private static void indent(StringBuilder out, String value) {
        for (String line : value.split("\n", -1)) {
            out.append("    ").append(line).append('\n');
        }
    }

    /** A line diff by longest common subsequence: "- " lines of a, "+ " lines of b, around a few equal lines. */
    private static void lineDiff(StringBuilder out, String[] a, String[] b, String aName, String bName) {
        int[][] lcs = new int[a.length + 1][b.length + 1];
        for (int i = a.length - 1; i >= 0; i--) {
            for (int j = b.length - 1; j >= 0; j--) {
                lcs[i][j] = a[i].equals(b[j]) ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
            }
        }
        List<String> lines = new ArrayList<>();
        int i = 0;
        int j = 0;
        while (i < a.length || j < b.length) {
            if (i < a.length && j < b.length && a[i].equals(b[j])) {
                lines.add("    " + a[i]);
                i++;
                j++;
            } else if (j >= b.length || (i < a.length && lcs[i + 1][j] >= lcs[i][j + 1])) {
                lines.add("  - " + a[i++]);
            } else {
                lines.add("  + " + b[j++]);
            }
        }
        out.append("  (- ").append(aName).append(", + ").append(bName).append(")\n");
        for (int k = 0; k < lines.size(); k++) {
            boolean near = false;
            for (int d = -2; d <= 2 && !near; d++) {
                int n = k + d;
                near = n >= 0 && n < lines.size() && !lines.get(n).startsWith("    ");
            }
            if (near) {
                out.append(lines.get(k)).append('\n');
            }
        }
    }

    int size() {
        return objects.size();
    }

    Map<String, String> asMap() {
        return objects;
    }

    private static String load(String resource) {
        try (InputStream in = SchemaDescription.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("missing resource " + resource);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
