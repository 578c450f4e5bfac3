"use strict";(self.rspackChunkryzen_nb=self.rspackChunkryzen_nb||[]).push([[0],{24(r,e,n){var a=n(22),o=n.n(a),t=n(23),p=(n.n(t))()(o());p.push([r.id,`/* The graph view (src/graph/): shared by the JupyterLab viewer (imported by index.css) and the
 * PartitionView anywidget (bundled into ryzen_nb/ui/partition_view.css by build-widget.mjs).
 *
 * The colours of precisions and devices are ryzen-nb's facts: the view sets them on each box as
 * attributes and none is written here. The rest follows the host's theme (JupyterLab's --jp-*,
 * VS Code's --vscode-*) with light-theme fallbacks. Every class starts with rnb-graph-.
 */

.rnb-graph {
  --rnb-graph-fg: var(--jp-ui-font-color1, var(--vscode-editor-foreground, #222));
  --rnb-graph-fg-muted: var(--jp-ui-font-color2, var(--vscode-descriptionForeground, #666));
  --rnb-graph-bg: var(--jp-layout-color1, var(--vscode-editor-background, #fff));
  --rnb-graph-bg-alt: var(--jp-layout-color2, var(--vscode-editorWidget-background, #f3f3f3));
  --rnb-graph-border: var(--jp-border-color1, var(--vscode-panel-border, #bdbdbd));
  --rnb-graph-accent: #f0a800; /* selection and matches: visible on light and dark themes */
  position: relative;
  display: flex;
  flex-direction: column;
  gap: 4px;
  min-width: 0;
  color: var(--rnb-graph-fg);
  font-family: var(--jp-ui-font-family, var(--vscode-font-family, system-ui, sans-serif));
  font-size: var(--jp-ui-font-size1, 13px);
}

.rnb-graph *,
.rnb-graph *::before,
.rnb-graph *::after {
  box-sizing: border-box;
}

/* -- toolbar, legend, status -------------------------------------------------------------------- */
.rnb-graph-toolbar {
  display: flex;
  flex-wrap: wrap;
  align-items: center;
  gap: 4px 6px;
}

.rnb-graph-search {
  flex: 0 1 260px;
  min-width: 140px;
  color: var(--rnb-graph-fg);
  background: var(--jp-input-background, var(--vscode-input-background, var(--rnb-graph-bg)));
  border: 1px solid var(--rnb-graph-border);
  border-radius: 3px;
  padding: 2px 6px;
  font: inherit;
}

.rnb-graph-button {
  color: var(--rnb-graph-fg);
  background: var(--rnb-graph-bg-alt);
  border: 1px solid var(--rnb-graph-border);
  border-radius: 3px;
  padding: 1px 8px;
  font: inherit;
  line-height: 1.5;
  cursor: pointer;
  white-space: nowrap;
}

.rnb-graph-button:hover {
  border-color: var(--rnb-graph-fg-muted);
}

.rnb-graph-found,
.rnb-graph-status,
.rnb-graph-legend-note {
  color: var(--rnb-graph-fg-muted);
  font-size: 0.92em;
}

.rnb-graph-found:empty {
  display: none;
}

.rnb-graph-toggle {
  display: inline-flex;
  align-items: center;
  gap: 3px;
  white-space: nowrap;
}

.rnb-graph-legend {
  display: flex;
  flex-wrap: wrap;
  align-items: center;
  gap: 2px 14px;
}

.rnb-graph-legend:empty {
  display: none;
}

.rnb-graph-legend-item {
  display: inline-flex;
  align-items: center;
  gap: 5px;
}

.rnb-graph-legend-swatch {
  display: inline-block;
  width: 22px;
  height: 12px;
  border: 2px solid var(--rnb-graph-fg-muted);
  border-left-width: 6px;
  border-radius: 3px;
}

.rnb-graph-legend-cpu .rnb-graph-legend-swatch {
  border-style: dashed;
  border-left-style: solid;
}

/* -- the drawing ---------------------------------------------------------------------------------- */
.rnb-graph-body {
  display: flex;
  gap: 8px;
  min-width: 0;
}

.rnb-graph-viewport {
  flex: 1 1 auto;
  min-width: 0;
  height: 560px;
  overflow: auto;
  border: 1px solid var(--rnb-graph-border);
  border-radius: 4px;
  background: var(--rnb-graph-bg);
  cursor: grab;
  outline: none;
}

.rnb-graph-viewport:focus-visible {
  border-color: var(--rnb-graph-accent);
}

.rnb-graph-panning .rnb-graph-viewport {
  cursor: grabbing;
  user-select: none;
}

.rnb-graph-svg {
  display: block;
  margin: 0 auto; /* a graph narrower than the view sits in its middle */
  font-family: var(--jp-ui-font-family, var(--vscode-font-family, system-ui, sans-serif));
}

.rnb-graph-edge {
  fill: none;
  stroke: var(--rnb-graph-fg-muted);
  stroke-width: 1.2;
  opacity: 0.75;
}

.rnb-graph-edge-hot {
  stroke: var(--rnb-graph-accent);
  stroke-width: 2.4;
  opacity: 1;
}

.rnb-graph-arrow {
  fill: var(--rnb-graph-fg-muted);
}

.rnb-graph-node,
.rnb-graph-group,
.rnb-graph-cluster-label,
.rnb-graph-cluster-count {
  cursor: pointer;
}

.rnb-graph-box {
  stroke-width: 1.5;
}

.rnb-graph-plain .rnb-graph-box {
  fill: var(--rnb-graph-bg-alt);
}

.rnb-graph-plain text {
  fill: var(--rnb-graph-fg);
}

.rnb-graph-cpu .rnb-graph-box {
  stroke-width: 2.6;
  stroke-dasharray: 5 3;
}

.rnb-graph-op {
  font-size: 12px;
  font-weight: 600;
}

.rnb-graph-prec {
  font-size: 10px;
  text-anchor: end;
  opacity: 0.9;
}

.rnb-graph-name {
  font-size: 10.5px;
  font-family: var(--jp-code-font-family, var(--vscode-editor-font-family, monospace));
}

.rnb-graph-node:hover .rnb-graph-box,
.rnb-graph-group:hover .rnb-graph-group-box {
  filter: brightness(1.08);
}

.rnb-graph-match .rnb-graph-box,
.rnb-graph-match .rnb-graph-group-box {
  stroke: var(--rnb-graph-accent);
  stroke-width: 3;
  stroke-dasharray: none;
}

.rnb-graph-selected .rnb-graph-box {
  stroke: var(--rnb-graph-accent);
  stroke-width: 4;
  stroke-dasharray: none;
}

.rnb-graph-group-box {
  fill: var(--rnb-graph-bg-alt);
  stroke: var(--rnb-graph-border);
  stroke-width: 1.5;
}

.rnb-graph-stack {
  fill: var(--rnb-graph-bg-alt);
  stroke: var(--rnb-graph-border);
  opacity: 0.7;
}

.rnb-graph-group-label {
  font-size: 12px;
  font-weight: 600;
  fill: var(--rnb-graph-fg);
}

.rnb-graph-group-count {
  font-size: 11px;
  fill: var(--rnb-graph-fg-muted);
}

.rnb-graph-group-cpu {
  font-weight: 600;
}

.rnb-graph-group-bar-plain {
  fill: var(--rnb-graph-fg-muted);
}

.rnb-graph-cluster-box {
  fill: var(--rnb-graph-bg-alt);
  fill-opacity: 0.45;
  stroke: var(--rnb-graph-border);
  stroke-dasharray: 4 3;
}

.rnb-graph-cluster-label {
  font-size: 12px;
  font-weight: 600;
  fill: var(--rnb-graph-fg-muted);
}

.rnb-graph-cluster-count {
  font-size: 11px;
  text-anchor: end;
  fill: var(--rnb-graph-fg-muted);
}

/* -- tooltip and side panel ------------------------------------------------------------------------- */
.rnb-graph-tooltip {
  position: absolute;
  z-index: 10;
  max-width: 340px;
  padding: 5px 8px;
  color: var(--rnb-graph-fg);
  background: var(--rnb-graph-bg);
  border: 1px solid var(--rnb-graph-border);
  border-radius: 4px;
  box-shadow: 0 2px 6px rgba(0, 0, 0, 0.2);
  white-space: pre-line;
  overflow-wrap: anywhere;
  pointer-events: none;
}

.rnb-graph-tooltip[hidden],
.rnb-graph-panel[hidden] {
  display: none;
}

.rnb-graph-panel {
  flex: 0 0 280px;
  max-height: 560px;
  overflow: auto;
  padding: 8px;
  border: 1px solid var(--rnb-graph-border);
  border-radius: 4px;
  background: var(--rnb-graph-bg);
  overflow-wrap: anywhere;
}

.rnb-graph-panel-head {
  display: flex;
  align-items: center;
  justify-content: space-between;
  gap: 6px;
}

.rnb-graph-panel-close {
  color: var(--rnb-graph-fg-muted);
  background: none;
  border: none;
  font-size: 1.3em;
  line-height: 1;
  cursor: pointer;
}

.rnb-graph-panel-name {
  margin: 2px 0 6px;
  font-family: var(--jp-code-font-family, var(--vscode-editor-font-family, monospace));
}

.rnb-graph-panel-chips {
  display: flex;
  flex-wrap: wrap;
  gap: 4px;
  margin-bottom: 6px;
}

.rnb-graph-chip {
  display: inline-block;
  padding: 0 7px;
  border: 1px solid var(--rnb-graph-border);
  border-radius: 8px;
  font-size: 0.92em;
}

.rnb-graph-panel-where {
  margin-bottom: 6px;
}

.rnb-graph-panel-reason {
  padding: 4px 6px;
  border-left: 3px solid var(--rnb-graph-accent);
  background: var(--rnb-graph-bg-alt);
}

.rnb-graph-panel-label {
  margin-top: 4px;
  color: var(--rnb-graph-fg-muted);
  font-size: 0.92em;
}

.rnb-graph-panel-list {
  margin: 2px 0;
  padding-left: 14px;
}

.rnb-graph-panel-tensor {
  display: block;
  font-size: 0.92em;
}

.rnb-graph-panel-link {
  display: block;
  max-width: 100%;
  margin: 1px 0;
  padding: 0;
  color: var(--jp-brand-color1, var(--vscode-textLink-foreground, #1a6fb5));
  background: none;
  border: none;
  font: inherit;
  text-align: left;
  /* a neighbour's full name wraps: names are what users copy into exclusions, a cut one is useless */
  white-space: normal;
  overflow-wrap: anywhere;
  cursor: pointer;
}

.rnb-graph-panel-muted {
  color: var(--rnb-graph-fg-muted);
}

/* a narrow output area: the panel goes under the drawing */
@media (max-width: 720px) {
  .rnb-graph-body {
    flex-direction: column;
  }

  .rnb-graph-panel {
    flex-basis: auto;
  }
}
`,""]),n.d(e,{},{A:p})},21(r,e,n){var a=n(22),o=n.n(a),t=n(23),p=n.n(t),i=n(24),l=p()(o());l.i(i.A),l.push([r.id,`/* ryzen-nb's ONNX viewer; JupyterLab's CSS variables keep it right in light and dark themes. */

.rnb-onnx-viewer {
  overflow: auto;
  padding: 12px 16px;
  font-family: var(--jp-ui-font-family);
  font-size: var(--jp-ui-font-size1);
  color: var(--jp-ui-font-color1);
  background: var(--jp-layout-color0);
}
.rnb-onnx-viewer h3 {
  font-size: var(--jp-ui-font-size2);
  margin: 14px 0 6px;
}
.rnb-facts {
  display: grid;
  grid-template-columns: max-content auto;
  gap: 2px 14px;
  margin: 0 0 10px;
}
.rnb-facts dt {
  color: var(--jp-ui-font-color2);
}
.rnb-facts dd {
  margin: 0;
}
.rnb-io {
  display: flex;
  flex-wrap: wrap;
  gap: 24px;
}
/* .rnb-table and .rnb-error are scoped to the viewer: JupyterLab loads this sheet on every page, and
   the notebook widgets' tables and error boxes use the same names (an unscoped .rnb-error drew an
   empty error bar under every widget). */
.rnb-onnx-viewer .rnb-table {
  border-collapse: collapse;
}
.rnb-onnx-viewer .rnb-table caption {
  text-align: left;
  font-weight: 600;
  padding-bottom: 4px;
}
.rnb-onnx-viewer .rnb-table th,
.rnb-onnx-viewer .rnb-table td {
  text-align: left;
  padding: 2px 10px 2px 0;
  border-bottom: 1px solid var(--jp-border-color2);
  vertical-align: top;
}
.rnb-name {
  font-family: var(--jp-code-font-family);
  font-size: var(--jp-code-font-size);
}
.rnb-op {
  font-weight: 600;
}
.rnb-reason {
  color: var(--jp-ui-font-color2);
}
.rnb-histogram {
  max-width: 560px;
}
.rnb-bar-row {
  display: grid;
  grid-template-columns: 160px 1fr 48px;
  align-items: center;
  gap: 8px;
  margin: 2px 0;
}
.rnb-bar {
  display: block;
  height: 10px;
  background: var(--jp-brand-color1);
  border-radius: 2px;
}
.rnb-bar-value {
  text-align: right;
}
.rnb-controls {
  display: flex;
  flex-wrap: wrap;
  align-items: center;
  gap: 14px;
  margin: 16px 0 8px;
  padding: 8px 0;
  border-top: 1px solid var(--jp-border-color2);
}
.rnb-control select {
  font-size: var(--jp-ui-font-size1);
}
.rnb-quantize {
  margin-left: auto;
}
.rnb-headline {
  font-size: var(--jp-ui-font-size2);
  font-weight: 600;
}
.rnb-muted {
  color: var(--jp-ui-font-color2);
  font-weight: normal;
}
.rnb-chip {
  display: inline-block;
  border-radius: 8px;
  padding: 0 7px;
  color: #fff;
  font-size: var(--jp-ui-font-size0);
}
/* the device and precision colours are ryzen-nb's facts (GET /ryzen-nb/facts): the viewer sets
   --rnb-device-npu and --rnb-device-cpu on its node and colours precision chips inline */
.rnb-chip.rnb-npu {
  background: var(--rnb-device-npu);
}
.rnb-chip.rnb-cpu {
  background: var(--rnb-device-cpu);
}
.rnb-prec-plain {
  color: var(--jp-ui-font-color2);
}
.rnb-legend {
  display: flex;
  flex-wrap: wrap;
  gap: 4px 14px;
  margin: 4px 0 8px;
}
.rnb-legend-item {
  display: inline-flex;
  align-items: center;
  gap: 5px;
}
.rnb-swatch {
  display: inline-block;
  width: 10px;
  height: 10px;
  border-radius: 2px;
}
.rnb-nodes tr.rnb-cpu td {
  background: var(--jp-error-color3);
}
.rnb-status.rnb-busy {
  color: var(--jp-ui-font-color2);
}
.rnb-onnx-viewer .rnb-error,
.rnb-onnx-viewer .rnb-status.rnb-error {
  border-left: 4px solid var(--jp-error-color1);
  background: var(--jp-error-color3);
  color: var(--jp-ui-font-color1);
  padding: 8px 12px;
  margin: 8px 0;
  white-space: pre-wrap;
}
.rnb-partition pre {
  font-size: var(--jp-code-font-size);
  white-space: pre-wrap;
}
/* the partition's two tabs: the graph (./graph.css) and the table */
.rnb-tabs {
  display: flex;
  gap: 2px;
  margin: 12px 0 8px;
  border-bottom: 1px solid var(--jp-border-color2);
}
.rnb-tab {
  margin-bottom: -1px;
  padding: 4px 16px;
  color: var(--jp-ui-font-color2);
  background: none;
  border: 1px solid transparent;
  border-radius: 4px 4px 0 0;
  font: inherit;
  cursor: pointer;
}
.rnb-tab-active {
  color: var(--jp-ui-font-color1);
  background: var(--jp-layout-color0);
  border-color: var(--jp-border-color2);
  border-bottom-color: var(--jp-layout-color0);
  font-weight: 600;
}
.rnb-partition-panel[hidden],
.rnb-tabs[hidden],
.rnb-tab-panel[hidden] {
  display: none;
}
.rnb-onnx-viewer .rnb-graph-viewport {
  height: max(420px, 70vh);
}
.rnb-onnx-viewer .rnb-graph-panel {
  max-height: max(420px, 70vh);
}
`,""]),n.d(e,{},{A:l})},23(r){r.exports=function(r){var e=[];return e.toString=function(){return this.map(function(e){var n="",a=void 0!==e[5];return e[4]&&(n+="@supports (".concat(e[4],") {")),e[2]&&(n+="@media ".concat(e[2]," {")),a&&(n+="@layer".concat(e[5].length>0?" ".concat(e[5]):""," {")),n+=r(e),a&&(n+="}"),e[2]&&(n+="}"),e[4]&&(n+="}"),n}).join("")},e.i=function(r,n,a,o,t){"string"==typeof r&&(r=[[null,r,void 0]]);var p={};if(a)for(var i=0;i<this.length;i++){var l=this[i][0];null!=l&&(p[l]=!0)}for(var s=0;s<r.length;s++){var b=[].concat(r[s]);a&&p[b[0]]||(void 0!==t&&(void 0===b[5]||(b[1]="@layer".concat(b[5].length>0?" ".concat(b[5]):""," {").concat(b[1],"}")),b[5]=t),n&&(b[2]&&(b[1]="@media ".concat(b[2]," {").concat(b[1],"}")),b[2]=n),o&&(b[4]?(b[1]="@supports (".concat(b[4],") {").concat(b[1],"}"),b[4]=o):b[4]="".concat(o)),e.push(b))}},e}},22(r){r.exports=function(r){return r[1]}},15(r){var e=[];function n(r){for(var n=-1,a=0;a<e.length;a++)if(e[a].identifier===r){n=a;break}return n}function a(r,a){for(var o={},t=[],p=0;p<r.length;p++){var i=r[p],l=a.base?i[0]+a.base:i[0],s=o[l]||0,b="".concat(l," ").concat(s);o[l]=s+1;var d=n(b),g={css:i[1],media:i[2],sourceMap:i[3],supports:i[4],layer:i[5]};if(-1!==d)e[d].references++,e[d].updater(g);else{var c=function(r,e){var n=e.domAPI(e);return n.update(r),function(e){e?(e.css!==r.css||e.media!==r.media||e.sourceMap!==r.sourceMap||e.supports!==r.supports||e.layer!==r.layer)&&n.update(r=e):n.remove()}}(g,a);a.byIndex=p,e.splice(p,0,{identifier:b,updater:c,references:1})}t.push(b)}return t}r.exports=function(r,o){var t=a(r=r||[],o=o||{});return function(r){r=r||[];for(var p=0;p<t.length;p++){var i=n(t[p]);e[i].references--}for(var l=a(r,o),s=0;s<t.length;s++){var b=n(t[s]);0===e[b].references&&(e[b].updater(),e.splice(b,1))}t=l}}},17(r){var e={};r.exports=function(r,n){var a=function(r){if(void 0===e[r]){var n=document.querySelector(r);if(window.HTMLIFrameElement&&n instanceof window.HTMLIFrameElement)try{n=n.contentDocument.head}catch(r){n=null}e[r]=n}return e[r]}(r);if(!a)throw Error("Couldn't find a style target. This probably means that the value for the 'insert' parameter is invalid.");a.appendChild(n)}},19(r){r.exports=function(r){var e=document.createElement("style");return r.setAttributes(e,r.attributes),r.insert(e,r.options),e}},18(r,e,n){r.exports=function(r){var e=n.nc;e&&r.setAttribute("nonce",e)}},16(r){r.exports=function(r){if("u"<typeof document)return{update:function(){},remove:function(){}};var e=r.insertStyleElement(r);return{update:function(n){var a,o,t;a="",n.supports&&(a+="@supports (".concat(n.supports,") {")),n.media&&(a+="@media ".concat(n.media," {")),(o=void 0!==n.layer)&&(a+="@layer".concat(n.layer.length>0?" ".concat(n.layer):""," {")),a+=n.css,o&&(a+="}"),n.media&&(a+="}"),n.supports&&(a+="}"),(t=n.sourceMap)&&"u">typeof btoa&&(a+="\n/*# sourceMappingURL=data:application/json;base64,".concat(btoa(unescape(encodeURIComponent(JSON.stringify(t))))," */")),r.styleTagTransform(a,e,r.options)},remove:function(){var r;null===(r=e).parentNode||r.parentNode.removeChild(r)}}}},20(r){r.exports=function(r,e){if(e.styleSheet)e.styleSheet.cssText=r;else{for(;e.firstChild;)e.removeChild(e.firstChild);e.appendChild(document.createTextNode(r))}}},14(r,e,n){var a=n(15),o=n.n(a),t=n(16),p=n.n(t),i=n(17),l=n.n(i),s=n(18),b=n.n(s),d=n(19),g=n.n(d),c=n(20),h=n.n(c),f=n(21),u={};u.styleTagTransform=h(),u.setAttributes=b(),u.insert=l().bind(null,"head"),u.domAPI=p(),u.insertStyleElement=g(),o()(f.A,u),f.A&&f.A.locals&&f.A.locals}}]);