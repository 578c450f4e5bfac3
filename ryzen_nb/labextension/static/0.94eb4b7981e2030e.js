"use strict";(self.rspackChunkryzen_nb=self.rspackChunkryzen_nb||[]).push([[0],{19(r,e,n){var t=n(20),o=n.n(t),a=n(21),i=(n.n(a))()(o());i.push([r.id,`/* ryzen-nb's ONNX viewer; JupyterLab's CSS variables keep it right in light and dark themes. */
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
.rnb-table {
  border-collapse: collapse;
}
.rnb-table caption {
  text-align: left;
  font-weight: 600;
  padding-bottom: 4px;
}
.rnb-table th,
.rnb-table td {
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
.rnb-error,
.rnb-status.rnb-error {
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
`,""]),n.d(e,{},{A:i})},21(r){r.exports=function(r){var e=[];return e.toString=function(){return this.map(function(e){var n="",t=void 0!==e[5];return e[4]&&(n+="@supports (".concat(e[4],") {")),e[2]&&(n+="@media ".concat(e[2]," {")),t&&(n+="@layer".concat(e[5].length>0?" ".concat(e[5]):""," {")),n+=r(e),t&&(n+="}"),e[2]&&(n+="}"),e[4]&&(n+="}"),n}).join("")},e.i=function(r,n,t,o,a){"string"==typeof r&&(r=[[null,r,void 0]]);var i={};if(t)for(var p=0;p<this.length;p++){var c=this[p][0];null!=c&&(i[c]=!0)}for(var s=0;s<r.length;s++){var l=[].concat(r[s]);t&&i[l[0]]||(void 0!==a&&(void 0===l[5]||(l[1]="@layer".concat(l[5].length>0?" ".concat(l[5]):""," {").concat(l[1],"}")),l[5]=a),n&&(l[2]&&(l[1]="@media ".concat(l[2]," {").concat(l[1],"}")),l[2]=n),o&&(l[4]?(l[1]="@supports (".concat(l[4],") {").concat(l[1],"}"),l[4]=o):l[4]="".concat(o)),e.push(l))}},e}},20(r){r.exports=function(r){return r[1]}},13(r){var e=[];function n(r){for(var n=-1,t=0;t<e.length;t++)if(e[t].identifier===r){n=t;break}return n}function t(r,t){for(var o={},a=[],i=0;i<r.length;i++){var p=r[i],c=t.base?p[0]+t.base:p[0],s=o[c]||0,l="".concat(c," ").concat(s);o[c]=s+1;var d=n(l),u={css:p[1],media:p[2],sourceMap:p[3],supports:p[4],layer:p[5]};if(-1!==d)e[d].references++,e[d].updater(u);else{var f=function(r,e){var n=e.domAPI(e);return n.update(r),function(e){e?(e.css!==r.css||e.media!==r.media||e.sourceMap!==r.sourceMap||e.supports!==r.supports||e.layer!==r.layer)&&n.update(r=e):n.remove()}}(u,t);t.byIndex=i,e.splice(i,0,{identifier:l,updater:f,references:1})}a.push(l)}return a}r.exports=function(r,o){var a=t(r=r||[],o=o||{});return function(r){r=r||[];for(var i=0;i<a.length;i++){var p=n(a[i]);e[p].references--}for(var c=t(r,o),s=0;s<a.length;s++){var l=n(a[s]);0===e[l].references&&(e[l].updater(),e.splice(l,1))}a=c}}},15(r){var e={};r.exports=function(r,n){var t=function(r){if(void 0===e[r]){var n=document.querySelector(r);if(window.HTMLIFrameElement&&n instanceof window.HTMLIFrameElement)try{n=n.contentDocument.head}catch(r){n=null}e[r]=n}return e[r]}(r);if(!t)throw Error("Couldn't find a style target. This probably means that the value for the 'insert' parameter is invalid.");t.appendChild(n)}},17(r){r.exports=function(r){var e=document.createElement("style");return r.setAttributes(e,r.attributes),r.insert(e,r.options),e}},16(r,e,n){r.exports=function(r){var e=n.nc;e&&r.setAttribute("nonce",e)}},14(r){r.exports=function(r){if("u"<typeof document)return{update:function(){},remove:function(){}};var e=r.insertStyleElement(r);return{update:function(n){var t,o,a;t="",n.supports&&(t+="@supports (".concat(n.supports,") {")),n.media&&(t+="@media ".concat(n.media," {")),(o=void 0!==n.layer)&&(t+="@layer".concat(n.layer.length>0?" ".concat(n.layer):""," {")),t+=n.css,o&&(t+="}"),n.media&&(t+="}"),n.supports&&(t+="}"),(a=n.sourceMap)&&"u">typeof btoa&&(t+="\n/*# sourceMappingURL=data:application/json;base64,".concat(btoa(unescape(encodeURIComponent(JSON.stringify(a))))," */")),r.styleTagTransform(t,e,r.options)},remove:function(){var r;null===(r=e).parentNode||r.parentNode.removeChild(r)}}}},18(r){r.exports=function(r,e){if(e.styleSheet)e.styleSheet.cssText=r;else{for(;e.firstChild;)e.removeChild(e.firstChild);e.appendChild(document.createTextNode(r))}}},12(r,e,n){var t=n(13),o=n.n(t),a=n(14),i=n.n(a),p=n(15),c=n.n(p),s=n(16),l=n.n(s),d=n(17),u=n.n(d),f=n(18),b=n.n(f),v=n(19),g={};g.styleTagTransform=b(),g.setAttributes=l(),g.insert=c().bind(null,"head"),g.domAPI=i(),g.insertStyleElement=u(),o()(v.A,g),v.A&&v.A.locals&&v.A.locals}}]);