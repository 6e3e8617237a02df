/**
 * The one stylesheet, served as a file from the dashboard itself (CSP `style-src 'self'`).
 * Colours are variables: light by default, dark under `prefers-color-scheme: dark` unless the
 * operator chose light, and dark when chosen (`<html data-theme>` from the preference cookie).
 * Tables scroll inside their own box, or stack into cards, so a 390 px screen never scrolls sideways.
 */

const LIGHT = `--bg:#f6f6f3;--card:#fff;--ink:#1f2328;--muted:#667085;--line:#e4e4de;--accent:#2f5d8a;--head:#22303c;--headink:#c9d4de;
--th:#fafaf8;--pre:#fbfbf9;--field:#fff;--fieldline:#cfcfc8;--note:#eef3f8;--warnbg:#fbf3ea;--badbg:#fcefee;--errink:#b42318;
--queued:#2f6fb0;--running:#7a4fb5;--succeeded:#2e7d4f;--failed:#b8661b;--dead:#b42318;--cancelled:#6b7280;color-scheme:light`;

const DARK = `--bg:#14181c;--card:#1c2228;--ink:#e3e8ed;--muted:#95a1ad;--line:#2c353e;--accent:#7fb0e0;--head:#0d1114;--headink:#b7c3ce;
--th:#20272e;--pre:#161b20;--field:#12171b;--fieldline:#3a4550;--note:#1b2a38;--warnbg:#33261a;--badbg:#3a1e1c;--errink:#f0837a;
--queued:#3d7cc0;--running:#8a61c4;--succeeded:#348a58;--failed:#c07326;--dead:#c7392c;--cancelled:#76808d;color-scheme:dark`;

export const CSS = `
:root{${LIGHT}}
@media (prefers-color-scheme:dark){:root:not([data-theme=light]){${DARK}}}
:root[data-theme=dark]{${DARK}}
:root[data-theme=light]{${LIGHT}}
*{box-sizing:border-box}
[hidden]{display:none!important}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
header{background:var(--head);color:var(--headink);padding:.6rem 1.5rem;display:flex;flex-wrap:wrap;gap:.4rem 1.5rem;align-items:center}
header .brand{font-weight:650;letter-spacing:.02em;color:#fff;text-decoration:none}
header nav{display:flex;flex-wrap:wrap;gap:.2rem 1rem}
header nav a{color:var(--headink);text-decoration:none}
header nav a:hover,header nav a.on{color:#fff}
header .tools{margin-left:auto;display:flex;flex-wrap:wrap;gap:.4rem;align-items:center}
header .tools form{margin:0}
header button{background:transparent;color:var(--headink);border-color:#4a5a68;padding:.1rem .55rem;font-size:.82rem}
.live{font-size:.78rem;color:var(--headink)}
.live::before{content:"";display:inline-block;width:.5rem;height:.5rem;border-radius:50%;margin-right:.3rem;background:#6b7280;vertical-align:middle}
.live[data-state=live]::before{background:#3fb970}.live[data-state=error]::before,.live[data-state=offline]::before{background:#e5534b}
main{max-width:1200px;margin:0 auto;padding:1.25rem 1.5rem 3rem}
h1{font-size:1.35rem;margin:.2rem 0 1rem;font-weight:600;overflow-wrap:anywhere}
h2{font-size:1.05rem;margin:1.6rem 0 .6rem;font-weight:600}
a{color:var(--accent)}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:1rem 1.1rem;margin-bottom:1rem}
.tiles{display:grid;grid-template-columns:repeat(auto-fit,minmax(108px,1fr));gap:.75rem;margin-bottom:1rem}
.tile{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:.7rem .9rem;text-decoration:none;color:inherit}
.tile .n{font-size:1.5rem;font-weight:600;font-variant-numeric:tabular-nums}
.tile .l{color:var(--muted);font-size:.85rem}
.tbl{max-width:100%;overflow-x:auto;border:1px solid var(--line);border-radius:8px;background:var(--card);margin-bottom:.5rem}
table{width:100%;border-collapse:collapse;background:var(--card)}
th,td{text-align:left;padding:.45rem .7rem;border-bottom:1px solid var(--line);vertical-align:top}
th{white-space:nowrap;background:var(--th);font-weight:600;font-size:.82rem;color:var(--muted);text-transform:uppercase;letter-spacing:.03em}
tr:last-child td{border-bottom:0}
td{overflow-wrap:anywhere}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.muted{color:var(--muted)}
.blk{display:block}
time{white-space:nowrap}
.mono,pre,code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85rem}
pre{background:var(--pre);border:1px solid var(--line);border-radius:6px;padding:.7rem;overflow:auto;max-height:28rem;white-space:pre-wrap;word-break:break-word;margin:.3rem 0}
.badge{display:inline-block;padding:0 .5rem;border-radius:999px;font-size:.8rem;font-weight:600;color:#fff;background:var(--muted)}
.s-queued{background:var(--queued)}.s-running{background:var(--running)}.s-succeeded,.s-ok,.s-active{background:var(--succeeded)}
.s-failed{background:var(--failed)}.s-dead,.s-firing,.s-paused{background:var(--dead)}.s-cancelled,.s-expired{background:var(--cancelled)}.s-held{background:var(--running)}
.err{color:var(--errink)}
.notice{border-left:4px solid var(--accent);background:var(--note);padding:.6rem .9rem;border-radius:4px;margin-bottom:1rem}
.notice.warn{border-color:var(--failed);background:var(--warnbg)}
.notice.bad{border-color:var(--dead);background:var(--badbg)}
form.filters{display:flex;flex-wrap:wrap;gap:.6rem;align-items:end;margin-bottom:1rem}
label{display:flex;flex-direction:column;font-size:.8rem;color:var(--muted);gap:.15rem}
input,select{font:inherit;padding:.3rem .5rem;border:1px solid var(--fieldline);border-radius:6px;background:var(--field);color:var(--ink);min-width:0;max-width:100%}
form.filters input,form.filters select{width:10rem}
button{font:inherit;padding:.35rem .9rem;border-radius:6px;border:1px solid var(--fieldline);background:var(--card);color:var(--ink);cursor:pointer}
button.primary{background:var(--accent);border-color:var(--accent);color:var(--bg)}
button.danger{border-color:#e3b3ae;color:var(--errink)}
.actions{display:flex;flex-wrap:wrap;gap:.6rem;margin:.4rem 0 1rem}
.actions form{margin:0}
form.inline{display:inline-block;margin:0 .3rem .2rem 0}form.inline button{padding:.1rem .5rem;font-size:.8rem}
.actions form.inline button{padding:.35rem .9rem;font-size:inherit}
dl.kv{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.3rem 1.2rem;margin:0}
dl.kv dt{color:var(--muted)}dl.kv dd{margin:0;overflow-wrap:anywhere}
.pager{display:flex;gap:1rem;margin-top:.8rem}
details summary{cursor:pointer;color:var(--accent)}
.login{max-width:22rem;margin:4rem auto}
.login input{width:100%}
dialog{background:var(--card);color:var(--ink);border:1px solid var(--line);border-radius:8px;max-width:min(30rem,92vw);padding:1rem 1.2rem}
dialog::backdrop{background:rgba(0,0,0,.45)}
dialog dl{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1rem}
kbd{font-family:ui-monospace,Menlo,Consolas,monospace;border:1px solid var(--line);border-radius:4px;padding:0 .35rem;background:var(--pre)}
td.event{background:var(--note)}td.num.event{color:var(--accent);font-weight:600}
form.filters label.wide input{width:16rem}
.check{flex-direction:row;align-items:center;color:var(--ink);margin:.4rem 0}
.ranges{display:flex;gap:1rem;margin-bottom:.6rem}.ranges a.on{font-weight:650;text-decoration:none;color:var(--ink)}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,30rem),1fr));gap:1rem}
.chart-card h2{margin-top:0}
svg.chart{display:block;max-width:100%;height:auto;overflow:visible}
svg.chart .ax{fill:var(--muted);font-size:9px}svg.chart .grid{stroke:var(--line);stroke-width:.6}
.k0{--c:#3d7cc0}.k1{--c:#c07326}.k2{--c:#8a61c4}.k3{--c:#2e9e9a}.k4{--c:#c7392c}.k5{--c:#76808d}.k6{--c:#b59a1a}.k7{--c:#d05ca0}
.o-succeeded{--c:var(--succeeded)}.o-failed{--c:var(--failed)}.o-dead{--c:var(--dead)}.o-cancelled{--c:var(--cancelled)}
svg.chart rect{fill:var(--c)}svg.chart .ln{fill:none;stroke:var(--c);stroke-width:1.6}svg.chart .pt{fill:var(--c)}svg.chart .d1{stroke-dasharray:4 2}svg.chart .d2{stroke-dasharray:1.5 2}
ul.legend{list-style:none;display:flex;flex-wrap:wrap;gap:.2rem 1rem;padding:0;margin:.4rem 0;font-size:.82rem}
.sw{display:inline-block;width:.7rem;height:.7rem;border-radius:2px;margin-right:.3rem;background:var(--c);vertical-align:middle}
.wf{overflow:auto;max-height:75vh;background:var(--card);border:1px solid var(--line);border-radius:8px;margin-bottom:1rem}
svg.wf-graph{display:block}svg.wf-graph .wf-edge{fill:none;stroke:var(--muted);stroke-width:1.2}svg.wf-graph marker path{fill:var(--muted)}
.wf-node{--c:var(--muted)}svg.wf-graph .wf-node rect{fill:var(--card);stroke:var(--c);stroke-width:1.4}svg.wf-graph .wf-node rect.wf-bar{fill:var(--c);stroke:none}
svg.wf-graph .wf-node.self rect{stroke-width:3}svg.wf-graph a:hover rect,svg.wf-graph a:focus rect{fill:var(--note)}
svg.wf-graph text{fill:var(--ink);font-size:12px}svg.wf-graph .wf-id{fill:var(--muted);font-size:11px}
.wf-node[data-state=queued]{--c:var(--queued)}.wf-node[data-state=running]{--c:var(--running)}.wf-node[data-state=succeeded]{--c:var(--succeeded)}
.wf-node[data-state=failed]{--c:var(--failed)}.wf-node[data-state=dead]{--c:var(--dead)}.wf-node[data-state=cancelled]{--c:var(--cancelled)}
.wf-node[data-state=waiting] rect:not(.wf-bar){stroke-dasharray:4 3}
.s-closed{background:var(--queued)}.s-done{background:var(--succeeded)}
.bar{display:flex;height:.9rem;border-radius:4px;overflow:hidden;background:var(--line);margin:.2rem 0;max-width:32rem}.bar>span{display:block;height:100%}
.bar>.s-waiting,.seg.s-waiting{background:var(--fieldline)}
td.barcell{width:10rem;min-width:6rem;white-space:nowrap;font-size:0}.seg{display:inline-block;height:.7rem;vertical-align:middle}
${Array.from({ length: 101 }, (_, i) => `.w${i}{width:${i}%}`).join('')}
@media (max-width:640px){
header{padding:.5rem .8rem}
main{padding:1rem .8rem 2.5rem}
dl.kv{grid-template-columns:1fr}dl.kv dd{margin-bottom:.4rem}
.tbl.stack{border:0;background:transparent;overflow:visible}
.tbl.stack table,.tbl.stack tbody,.tbl.stack tr,.tbl.stack td{display:block;width:100%}
.tbl.stack thead{display:none}
.tbl.stack table{background:transparent}
.tbl.stack tr{background:var(--card);border:1px solid var(--line);border-radius:8px;margin-bottom:.6rem;padding:.3rem 0}
.tbl.stack td{border:0;padding:.15rem .8rem;text-align:left}
.tbl.stack td[data-label]::before{content:attr(data-label);display:inline-block;min-width:6.5rem;color:var(--muted);font-size:.78rem;text-transform:uppercase}
.tbl.stack td.barcell{display:flex;align-items:center}
}
`;
