/*
 * Built by `make presto` into a jar that sorts before hive-apache-*.jar in PrestoDB's
 * hive-hadoop2 and hudi plugin folders (plugins load their jars in name order).
 *
 * Why: Hudi 0.14 inside PrestoDB 0.287 asks HiveVersionInfo (this package's annotation) which
 * Hive it runs with. PrestoDB's hive-apache 3.0.0 answers "3.0.0" but leaves out Hive 3's
 * timestamp and date writables, so every merge-on-read snapshot (`_rt`) read of a timestamp or
 * date column fails (NullPointerException in Hive3Shim). Declared as Hive 2, Hudi makes the
 * Hive 2 writables that PrestoDB's object inspectors read. Nothing else in the plugins reads
 * this annotation.
 */
@HiveVersionAnnotation(
    version = "2.3.0-presto",
    shortVersion = "2.3.0",
    revision = "",
    branch = "",
    user = "",
    date = "",
    url = "",
    srcChecksum = "")
package org.apache.hive.common;
