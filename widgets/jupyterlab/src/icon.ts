import { LabIcon } from '@jupyterlab/ui-components';

/** A chip with an "AI" mark: the launcher cards and the ONNX file type. */
const svg = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24">
  <rect class="jp-icon3" x="4" y="4" width="16" height="16" rx="2" fill="#616161"/>
  <g class="jp-icon-accent0" fill="#fff">
    <path d="M8.1 15.5 10 8.5h1.5l1.9 7h-1.4l-.4-1.6H9.9l-.4 1.6zm2.1-2.8h1.4L10.9 10z"/>
    <rect x="14.2" y="8.5" width="1.4" height="7"/>
  </g>
  <g class="jp-icon3" fill="#616161">
    <rect x="7" y="1.5" width="1.5" height="2.5"/><rect x="11.25" y="1.5" width="1.5" height="2.5"/>
    <rect x="15.5" y="1.5" width="1.5" height="2.5"/><rect x="7" y="20" width="1.5" height="2.5"/>
    <rect x="11.25" y="20" width="1.5" height="2.5"/><rect x="15.5" y="20" width="1.5" height="2.5"/>
  </g>
</svg>`;

export const ryzenIcon = new LabIcon({ name: 'ryzen-nb:chip', svgstr: svg });
