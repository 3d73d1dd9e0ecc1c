-- A description of schema layover read from the catalogs (not pg_dump, which a server's client
-- tools may lack or not match): one row per object, (key, value), where the value holds everything
-- that defines the object. Objects that belong to an extension are described by the extension;
-- Flyway's history table is not Layover's schema. Columns' attoptions leave out pg_attver, which
-- some server builds record per column by themselves (it differs between any two databases).
WITH ns AS (
    SELECT oid FROM pg_namespace WHERE nspname = 'layover'
), ext_member AS (
    SELECT classid, objid FROM pg_depend WHERE deptype = 'e'
), rel AS (
    SELECT c.* FROM pg_class c
    WHERE c.relnamespace = (SELECT oid FROM ns)
      AND c.relname NOT LIKE 'flyway\_schema\_history%'
      AND NOT EXISTS (SELECT 1 FROM ext_member e WHERE e.classid = 'pg_class'::regclass AND e.objid = c.oid)
), cols AS (
    SELECT a.attrelid,
           string_agg(format('  %s %s%s%s%s%s%s%s%s%s',
                   quote_ident(a.attname),
                   format_type(a.atttypid, a.atttypmod),
                   CASE WHEN a.attcollation <> t.typcollation
                        THEN ' collate ' || (SELECT quote_ident(co.collname) FROM pg_collation co WHERE co.oid = a.attcollation) ELSE '' END,
                   CASE WHEN a.attnotnull THEN ' not null' ELSE '' END,
                   CASE WHEN a.atthasdef AND a.attgenerated = '' THEN ' default ' || pg_get_expr(d.adbin, d.adrelid) ELSE '' END,
                   CASE WHEN a.attgenerated <> '' THEN ' generated (' || pg_get_expr(d.adbin, d.adrelid) || ') ' || a.attgenerated::text ELSE '' END,
                   CASE WHEN a.attidentity <> '' THEN ' identity ' || a.attidentity::text ELSE '' END,
                   CASE WHEN a.attstattarget >= 0 THEN ' statistics ' || a.attstattarget ELSE '' END,
                   CASE WHEN a.attstorage <> t.typstorage THEN ' storage ' || a.attstorage::text ELSE '' END,
                   concat_ws(' ', CASE WHEN a.attacl IS NOT NULL THEN ' acl ' || a.attacl::text END,
                             CASE WHEN EXISTS (SELECT 1 FROM unnest(a.attoptions) o WHERE o NOT LIKE 'pg\_attver=%')
                                  THEN ' options ' || (SELECT array_agg(o ORDER BY o) FROM unnest(a.attoptions) o WHERE o NOT LIKE 'pg\_attver=%')::text END)),
               E'\n' ORDER BY a.attnum) AS list
    FROM pg_attribute a
    JOIN pg_type t ON t.oid = a.atttypid
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE a.attnum > 0 AND NOT a.attisdropped
    GROUP BY a.attrelid
)
SELECT key, value FROM (
    -- the schema itself
    SELECT 'schema layover' AS key,
           format('acl %s', n.nspacl) AS value
    FROM pg_namespace n WHERE n.nspname = 'layover'

    UNION ALL
    -- extensions of the database, and where they live
    SELECT 'extension ' || e.extname,
           format('schema %s, version %s, relocatable %s', n.nspname, e.extversion, e.extrelocatable)
    FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace

    UNION ALL
    -- tables: kind, options, grants, rows, columns in order
    SELECT 'table ' || c.relname,
           format(E'kind %s, persistence %s, replica identity %s, row security %s/%s, options %s, acl %s, rows %s\ncolumns:\n%s',
                  c.relkind, c.relpersistence, c.relreplident, c.relrowsecurity, c.relforcerowsecurity,
                  c.reloptions, c.relacl,
                  (xpath('/row/n/text()', query_to_xml(format('SELECT count(*) AS n FROM layover.%I', c.relname),
                                                       false, true, '')))[1]::text,
                  cols.list)
    FROM rel c JOIN cols ON cols.attrelid = c.oid
    WHERE c.relkind IN ('r', 'p', 'f')

    UNION ALL
    -- views: definition, columns, options, grants
    SELECT 'view ' || c.relname,
           format(E'kind %s, options %s, acl %s\ncolumns:\n%s\ndefinition:\n%s',
                  c.relkind, c.reloptions, c.relacl, cols.list, pg_get_viewdef(c.oid, true))
    FROM rel c JOIN cols ON cols.attrelid = c.oid
    WHERE c.relkind IN ('v', 'm')

    UNION ALL
    -- composite types made by CREATE TYPE (a table's row type comes with the table)
    SELECT 'composite type ' || c.relname, format(E'acl %s\ncolumns:\n%s', c.relacl, cols.list)
    FROM rel c JOIN cols ON cols.attrelid = c.oid
    WHERE c.relkind = 'c'

    UNION ALL
    -- indexes
    SELECT 'index ' || c.relname,
           format('%s; options %s; clustered %s; replica identity %s; valid %s; constraint %s',
                  pg_get_indexdef(c.oid), c.reloptions, i.indisclustered, i.indisreplident, i.indisvalid,
                  (SELECT con.conname FROM pg_constraint con WHERE con.conindid = c.oid AND con.contype IN ('p', 'u', 'x')))
    FROM rel c JOIN pg_index i ON i.indexrelid = c.oid
    WHERE c.relkind IN ('i', 'I')

    UNION ALL
    -- sequences, with the column that owns them
    SELECT 'sequence ' || c.relname,
           format('type %s, start %s, increment %s, min %s, max %s, cache %s, cycle %s, owned by %s, acl %s',
                  format_type(s.seqtypid, NULL), s.seqstart, s.seqincrement, s.seqmin, s.seqmax, s.seqcache, s.seqcycle,
                  (SELECT d.deptype::text || ' ' || t.relname || '.' || a.attname
                   FROM pg_depend d
                   JOIN pg_class t ON t.oid = d.refobjid
                   JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
                   WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.refclassid = 'pg_class'::regclass
                     AND d.deptype IN ('a', 'i')),
                  c.relacl)
    FROM rel c JOIN pg_sequence s ON s.seqrelid = c.oid
    WHERE c.relkind = 'S'

    UNION ALL
    -- constraints (of tables and of domains)
    SELECT 'constraint ' || coalesce(t.relname, format_type(con.contypid, NULL)) || '.' || con.conname,
           format('%s %s; validated %s; no inherit %s',
                  con.contype, pg_get_constraintdef(con.oid, true), con.convalidated, con.connoinherit)
    FROM pg_constraint con
    LEFT JOIN pg_class t ON t.oid = con.conrelid
    WHERE con.connamespace = (SELECT oid FROM ns)
      AND coalesce(t.relname, '') NOT LIKE 'flyway\_schema\_history%'

    UNION ALL
    -- triggers (not the internal ones of foreign keys: the constraints say those)
    SELECT 'trigger ' || c.relname || '.' || tg.tgname,
           format('%s; enabled %s', pg_get_triggerdef(tg.oid, true), tg.tgenabled)
    FROM pg_trigger tg JOIN rel c ON c.oid = tg.tgrelid
    WHERE NOT tg.tgisinternal

    UNION ALL
    -- rules other than the views' own
    SELECT 'rule ' || c.relname || '.' || r.rulename, pg_get_ruledef(r.oid, true)
    FROM pg_rewrite r JOIN rel c ON c.oid = r.ev_class
    WHERE r.rulename <> '_RETURN'

    UNION ALL
    -- row security policies
    SELECT 'policy ' || c.relname || '.' || p.polname,
           format('cmd %s, permissive %s, roles %s, using %s, check %s', p.polcmd, p.polpermissive, p.polroles,
                  pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid))
    FROM pg_policy p JOIN rel c ON c.oid = p.polrelid

    UNION ALL
    -- functions and procedures: the definition, and their properties spelled out
    SELECT 'function ' || p.oid::regprocedure::text,
           format(E'kind %s, language %s, volatility %s, strict %s, parallel %s, security definer %s, leakproof %s, '
                  'cost %s, rows %s, config %s, acl %s\n%s',
                  p.prokind, l.lanname, p.provolatile, p.proisstrict, p.proparallel, p.prosecdef, p.proleakproof,
                  p.procost, p.prorows, p.proconfig, p.proacl,
                  CASE WHEN p.prokind IN ('f', 'p', 'w') THEN pg_get_functiondef(p.oid) END)
    FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
    WHERE p.pronamespace = (SELECT oid FROM ns)
      AND NOT EXISTS (SELECT 1 FROM ext_member e WHERE e.classid = 'pg_proc'::regclass AND e.objid = p.oid)

    UNION ALL
    -- types made by CREATE TYPE or CREATE DOMAIN (not a relation's row type, not array types)
    SELECT 'type ' || format_type(t.oid, NULL),
           format('type %s, base %s, not null %s, default %s, enum %s, acl %s', t.typtype,
                  format_type(t.typbasetype, t.typtypmod), t.typnotnull, t.typdefault,
                  (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid),
                  t.typacl)
    FROM pg_type t
    WHERE t.typnamespace = (SELECT oid FROM ns)
      AND (t.typrelid = 0 OR (SELECT c.relkind FROM pg_class c WHERE c.oid = t.typrelid) = 'c')
      AND NOT (t.typcategory = 'A' AND t.typelem <> 0)
      AND NOT EXISTS (SELECT 1 FROM ext_member e WHERE e.classid = 'pg_type'::regclass AND e.objid = t.oid)

    UNION ALL
    -- any other object in the schema (operators, operator classes and families, collations, text
    -- search objects, conversions, extended statistics), by name only
    SELECT 'other ' || o.type || ' ' || o.identity, ''
    FROM (SELECT 'pg_operator'::regclass AS classid, oid, oprnamespace AS nsp FROM pg_operator
          UNION ALL SELECT 'pg_opclass'::regclass, oid, opcnamespace FROM pg_opclass
          UNION ALL SELECT 'pg_opfamily'::regclass, oid, opfnamespace FROM pg_opfamily
          UNION ALL SELECT 'pg_collation'::regclass, oid, collnamespace FROM pg_collation
          UNION ALL SELECT 'pg_conversion'::regclass, oid, connamespace FROM pg_conversion
          UNION ALL SELECT 'pg_ts_config'::regclass, oid, cfgnamespace FROM pg_ts_config
          UNION ALL SELECT 'pg_ts_dict'::regclass, oid, dictnamespace FROM pg_ts_dict
          UNION ALL SELECT 'pg_ts_parser'::regclass, oid, prsnamespace FROM pg_ts_parser
          UNION ALL SELECT 'pg_ts_template'::regclass, oid, tmplnamespace FROM pg_ts_template
          UNION ALL SELECT 'pg_statistic_ext'::regclass, oid, stxnamespace FROM pg_statistic_ext) x
    CROSS JOIN LATERAL pg_identify_object(x.classid, x.oid, 0) o
    WHERE x.nsp = (SELECT oid FROM ns)
      AND NOT EXISTS (SELECT 1 FROM ext_member e WHERE e.classid = x.classid AND e.objid = x.oid)

    UNION ALL
    -- default privileges for objects made in the schema
    SELECT 'default privileges ' || da.defaclobjtype::text || ' for ' || pg_get_userbyid(da.defaclrole), da.defaclacl::text
    FROM pg_default_acl da
    WHERE da.defaclnamespace = (SELECT oid FROM ns)

    UNION ALL
    -- comments on every object of the schema and its columns
    SELECT 'comment on ' || CASE WHEN d.classoid = 'pg_proc'::regclass
                                 THEN 'function ' || d.objoid::regprocedure::text
                                 ELSE o.type || ' ' || o.identity END,
           d.description
    FROM pg_description d
    CROSS JOIN LATERAL pg_identify_object(d.classoid, d.objoid, d.objsubid) o
    WHERE (o.schema = 'layover' OR (o.type = 'schema' AND o.identity = 'layover')
           OR o.identity LIKE '% on layover.%')
      AND o.identity NOT LIKE '%flyway\_schema\_history%'
      AND NOT EXISTS (SELECT 1 FROM ext_member e WHERE e.classid = d.classoid AND e.objid = d.objoid)
) described
ORDER BY key COLLATE "C"
